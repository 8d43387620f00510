import { algorithmNames } from '@sluice/core';
import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import { type DemoServer, LIMIT_PER_SECOND, startServer } from '../../examples/demo/src/server.js';
import { manualClock } from '../helpers/clock.js';
import { runToEnd } from './example-process.js';

/**
 * `pnpm demo` drives its server for about 25 s; this runs the same server for what the demo
 * says of it, on an injected clock, and the command's check of its argument.
 */
describe('example demo: the server the demo drives', () => {
  let server: DemoServer | undefined;
  afterEach(() => server?.close());

  // The buckets refill one request every 100 ms, so half the quota is back 500 ms later. The
  // counter waits for the next window, where the 10 just passed weigh 10 at its start and 5
  // halfway (1.5 s from now); it first admits one when they weigh 9, 1.1 s from now.
  it.each([
    ['token-bucket', '1', 500],
    ['gcra', '1', 500],
    ['sliding-window-counter', '2', 1_500],
  ] as const)(
    '%s: 10 a second pass, the rest are refused (Retry-After %s) and spend nothing',
    async (algorithm, retryAfter, halfBackMs) => {
      const clock = manualClock(1_800_000_000_000);
      server = await startServer(algorithm, clock);
      const { origin, pathname } = server.url;
      const statuses: number[] = [];
      let refused: request.Response | undefined;
      for (let i = 0; i < 15; i++) {
        const res = await request(origin).get(pathname);
        statuses.push(res.status);
        if (res.status === 429) refused = res;
      }
      expect(statuses).toEqual([...Array(LIMIT_PER_SECOND).fill(200), ...Array(5).fill(429)]);
      expect(refused?.headers['retry-after']).toBe(retryAfter);
      expect(refused?.headers.ratelimit).toMatch(/^"10-per-1s";r=0;t=\d+$/);
      expect(refused?.body['violated-policies']).toEqual(['10-per-1s']);
      // Then half the quota is back, as if the five refusals had never been sent.
      clock.advance(halfBackMs);
      const after: number[] = [];
      for (let i = 0; i < 11; i++) after.push((await request(origin).get(pathname)).status);
      expect(after.filter((s) => s === 200)).toHaveLength(5);
    },
  );

  it('`--algorithm=` takes only an algorithm sluice has', async () => {
    const { code, output } = await runToEnd('demo', 'start', 12_000, ['--algorithm=nope']);
    expect(code).toBe(2);
    expect(output).toContain(`Unknown algorithm "nope"; choose one of ${algorithmNames.join(', ')}.`);
  });
});
