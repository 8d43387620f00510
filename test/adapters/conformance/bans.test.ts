import request from 'supertest';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { manualClock } from '../../helpers/clock.js';
import type { RunningApp } from '../harness/index.js';
import { collectingLogger, MINUTE_START } from '../helpers.js';
import { adapterCases } from '../stores.js';

const { cases, close } = await adapterCases();
afterAll(() => close());

describe.each(cases)('$name: bans after repeated refusals', ({ harness, store }) => {
  let app: RunningApp | undefined;
  afterEach(() => app?.close());

  it('refuses with 403 for the ban duration after more than `after` refusals, in the store', async () => {
    const clock = manualClock(MINUTE_START);
    const shared = { limit: 1, window: '1m', algorithm: 'fixed-window', clock, logger: collectingLogger() };
    const ban = { after: 2, window: '1m', duration: '10m' };
    const onExceeded = (_req: unknown, d: { reason?: string }) => seen.push(d.reason ?? 'over');
    const seen: string[] = [];
    app = await harness.start({ limits: [{ ...shared, store: store.create(), prefix: 'banned', ban, onExceeded }] });
    await request(app.url).get('/').expect(200);
    await request(app.url).get('/').expect(429);
    await request(app.url).get('/').expect(429);
    const banned = await request(app.url).get('/').expect(403);
    expect(banned.headers['retry-after']).toBe('600');
    // The draft's type for a client refused for its behaviour, naming the ban as the policy
    // violated from the refusal that starts it (that one named none), as every one after it.
    const banProblem = {
      type: 'https://iana.org/assignments/http-problem-types#abnormal-usage-detected',
      title: 'Abnormal usage detected',
      status: 403,
      'violated-policies': ['ban'],
    };
    expect(JSON.parse(banned.text)).toMatchObject({
      ...banProblem,
      detail: expect.stringMatching(/refused for 600 s/),
    });
    // The quota window ends, the ban does not; the quota's fields are not sent while it lasts.
    clock.advance(60_000);
    const still = await request(app.url).get('/').expect(403);
    expect(still.headers['retry-after']).toBe('540');
    expect(JSON.parse(still.text)).toMatchObject(banProblem);
    expect(still.headers.ratelimit).toBeUndefined();
    expect(seen).toEqual(['over', 'over', 'banned', 'banned']);
    clock.advance(540_000);
    await request(app.url).get('/').expect(200);
    expect(app.hits()).toBe(2);
  });

  it('a ban shorter than the quota wait tells the client to wait for both, with no quota fields (it was banned again)', async () => {
    const clock = manualClock(MINUTE_START);
    const shared = { limit: 1, window: '1m', algorithm: 'fixed-window', clock, logger: collectingLogger() };
    app = await harness.start({ limits: [{ ...shared, store: store.create(), ban: { after: 0, duration: '10s' } }] });
    await request(app.url).get('/').expect(200);
    const starts = await request(app.url).get('/').expect(403);
    expect(starts.headers['retry-after']).toBe('60');
    expect([starts.headers.ratelimit, starts.headers['ratelimit-policy']]).toEqual([undefined, undefined]);
    expect(JSON.parse(starts.text)).toMatchObject({ detail: expect.stringMatching(/60 s/) });
    // A client that waits as told finds its quota back.
    clock.advance(60_000);
    await request(app.url).get('/').expect(200);
  });

  it('keeps apart the bans of two prefixes alike in their first 60 characters (they shared one)', async () => {
    const clock = manualClock(MINUTE_START);
    const shared = { limit: 1, window: '1m', clock, store: store.create(), logger: collectingLogger() };
    const ban = { after: 0, duration: '1h' };
    const start = 'tenant.'.padEnd(60, 'x');
    app = await harness.start({ limits: [{ ...shared, prefix: `${start}.one`, ban }] });
    const other = await harness.start({ limits: [{ ...shared, prefix: `${start}.two`, ban }] });
    try {
      await request(app.url).get('/').expect(200);
      await request(app.url).get('/').expect(403);
      await request(other.url).get('/').expect(200);
    } finally {
      await other.close();
    }
  });

  it('answers a ban with 429 when asked, and with the message when one is set', async () => {
    const clock = manualClock(MINUTE_START);
    app = await harness.start({
      limits: [
        {
          limit: 1,
          window: '1m',
          clock,
          store: store.create(),
          logger: collectingLogger(),
          message: 'Go away.',
          ban: { after: 0, duration: '1h', status: 429 },
        },
      ],
    });
    await request(app.url).get('/').expect(200);
    const first = await request(app.url).get('/').expect(429);
    expect(first.text).toBe('Go away.');
    expect(first.headers['retry-after']).toBe('3600');
    clock.advance(3_599_000);
    expect((await request(app.url).get('/').expect(429)).headers['retry-after']).toBe('1');
  });
});
