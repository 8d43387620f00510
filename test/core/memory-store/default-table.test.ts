import { createLimiter, DEFAULT_MAX_KEYS } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import { defaultMemoryStore } from '../../../packages/core/src/memory-store/default-store.js';
import { manualClock } from '../../helpers/clock.js';

describe('the default memory stores', () => {
  it('count apart under the same namespace', async () => {
    const clock = manualClock();
    const a = createLimiter({ limit: 1, window: '1m', clock, store: defaultMemoryStore(), prefix: 'same' });
    const b = createLimiter({ limit: 1, window: '1m', clock, store: defaultMemoryStore(), prefix: 'same' });
    expect((await a.consume('client')).allowed).toBe(true);
    expect((await b.consume('client')).allowed).toBe(true);
    expect((await a.consume('client')).allowed).toBe(false);
  });

  // Regression: every default store sat on one index of the process, so a client who could
  // make one limiter see many keys (an API key taken from a header) pushed every other
  // limiter's clients out: a login limiter's count was reset over HTTP in 22 s.
  it('keep their clients however many keys another one sees', async () => {
    const clock = manualClock();
    const login = createLimiter({ limit: 3, window: '15m', clock, store: defaultMemoryStore(), prefix: 'login' });
    const api = createLimiter({ limit: 100, window: '1m', clock, store: defaultMemoryStore(), prefix: 'api' });
    for (let i = 0; i < 3; i++) await login.consume('203.0.113.7');
    for (let i = 0; i <= DEFAULT_MAX_KEYS; i++) await api.consume(`key-${i}`);
    expect(await login.consume('203.0.113.7')).toMatchObject({ allowed: false, remaining: 0 });
  });
});
