import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { hold } from '@sluice/core';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

const fakeResponse = (state: { destroyed?: boolean; writableEnded?: boolean } = {}) =>
  Object.assign(new EventEmitter(), { destroyed: false, writableEnded: false, ...state }) as unknown as ServerResponse;

describe('hold', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('resolves true after the delay and leaves no listener behind', async () => {
    const res = fakeResponse();
    const held = hold(res, 250, 'api');
    vi.advanceTimersByTime(249);
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(1);
    await expect(held).resolves.toBe(true);
    expect(res.listenerCount('close')).toBe(0);
  });

  it('resolves false as soon as the response closes, clearing its timer', async () => {
    const res = fakeResponse();
    const held = hold(res, 10_000, 'api');
    res.emit('close');
    await expect(held).resolves.toBe(false);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('does not wait for a response that is already gone', async () => {
    await expect(hold(fakeResponse({ destroyed: true }), 10_000, 'api')).resolves.toBe(false);
    await expect(hold(fakeResponse({ writableEnded: true }), 10_000, 'api')).resolves.toBe(false);
    expect(vi.getTimerCount()).toBe(0);
  });
});
