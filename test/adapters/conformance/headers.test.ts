import { parseRateLimit } from 'ratelimit-header-parser';
import { type Item, parseDictionary, parseList } from 'structured-headers';
import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import { harnesses, type RunningApp } from '../harness/index.js';
import { clockAt, collectingLogger, draft11, MINUTE_START } from '../helpers.js';

describe.each(harnesses)('$name: RateLimit headers', (harness) => {
  let app: RunningApp | undefined;
  afterEach(() => app?.close());

  const base = { limit: 3, window: '1m', algorithm: 'fixed-window', logger: collectingLogger() };

  it('sends draft-11 RateLimit-Policy and RateLimit by default, valid RFC 9651 Lists', async () => {
    app = await harness.start({ limits: [{ ...base, clock: clockAt(15_000) }] });
    const seen = [];
    for (let i = 0; i < 3; i++) seen.push(draft11(await request(app.url).get('/').expect(200)));
    expect(seen.map((h) => h.policy)).toEqual(Array(3).fill({ '3-per-1m': { q: 3, w: 60 } }));
    expect(seen.map((h) => h.state['3-per-1m'])).toEqual([
      { r: 2, t: 45 },
      { r: 1, t: 45 },
      { r: 0, t: 45 },
    ]);
  });

  it('answers a 429 with Retry-After no earlier than t, and the quota-exceeded problem', async () => {
    app = await harness.start({ limits: [{ ...base, limit: 1, clock: clockAt(15_000) }] });
    await request(app.url).get('/').expect(200);
    const res = await request(app.url).get('/').expect(429);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(JSON.parse(res.text)).toMatchObject({
      type: 'https://iana.org/assignments/http-problem-types#quota-exceeded',
      status: 429,
      'violated-policies': ['1-per-1m'],
    });
    const { state } = draft11(res);
    expect(state['1-per-1m']).toEqual({ r: 0, t: 45 });
    expect(res.headers['retry-after']).toBe('45');
    expect(app.hits()).toBe(1);
  });

  // Express ended a HEAD refusal with its body's bytes left out and no Content-Length, where
  // Koa, Fastify and Express's own GET answer name the length the GET would have.
  it('answers a HEAD refused as it answers the GET, its Content-Length included', async () => {
    app = await harness.start({ limits: [{ ...base, limit: 1, clock: clockAt(15_000) }] });
    await request(app.url).get('/').expect(200);
    const got = await request(app.url).get('/').expect(429);
    const head = await request(app.url).head('/').expect(429);
    expect(head.headers['content-length']).toBe(String(Buffer.byteLength(got.text)));
    expect(head.headers['content-type']).toBe(got.headers['content-type']);
    expect(head.headers['retry-after']).toBe(got.headers['retry-after']);
  });

  // draft-11 sent t=0 while draft-7, draft-6 and X-RateLimit-Reset said 999999999999999 (Infinity clamped).
  it('states a cost no wait lets pass as draft-11 does in every draft: the quota as restored, no Retry-After', async () => {
    const seen: Record<string, string | undefined>[] = [];
    for (const standard of ['draft-7', 'draft-6'] as const) {
      const started = await harness.start({
        limits: [{ ...base, cost: () => 10, clock: clockAt(15_000), headers: { standard, legacy: true } }],
      });
      try {
        const res = await request(started.url).get('/').expect(429);
        const h = res.headers as Record<string, string | undefined>;
        seen.push({
          ratelimit: h.ratelimit,
          reset: h['ratelimit-reset'],
          legacy: h['x-ratelimit-reset'],
          retry: h['retry-after'],
        });
      } finally {
        await started.close();
      }
    }
    const now = String((MINUTE_START + 15_000) / 1000);
    expect(seen).toEqual([
      { ratelimit: 'limit=3, remaining=3, reset=0', reset: undefined, legacy: now, retry: undefined },
      { ratelimit: undefined, reset: '0', legacy: now, retry: undefined },
    ]);
  });

  it('rounds Retry-After up to whole seconds', async () => {
    app = await harness.start({ limits: [{ ...base, limit: 1, window: '10s', clock: clockAt(2_500) }] });
    await request(app.url).get('/').expect(200);
    const res = await request(app.url).get('/').expect(429);
    expect(res.headers['retry-after']).toBe('8');
    expect(draft11(res).state['1-per-10s']).toEqual({ r: 0, t: 8 });
  });

  it('lists one item per policy of a multi-policy limiter', async () => {
    const policies = [
      { name: 'burst', limit: 2, window: '1s', algorithm: 'fixed-window' },
      { name: 'daily', limit: 100, window: '1d', algorithm: 'fixed-window' },
    ];
    app = await harness.start({ limits: [{ policies, clock: clockAt(250), logger: collectingLogger() }] });
    const res = await request(app.url).get('/').expect(200);
    const { policy, state } = draft11(res);
    expect(policy).toEqual({ burst: { q: 2, w: 1 }, daily: { q: 100, w: 86_400 } });
    expect(state.burst).toEqual({ r: 1, t: 1 });
    expect(state.daily?.r).toBe(99);
  });

  // Regression: the single-valued fields reported the policy with the least share left, 19 of
  // 100 an hour, where 9 of 10 a second were left, and the client was refused after 9 more.
  // Draft-6 and draft-7: the fields of "the time window with the lower RateLimit-Remaining".
  it.each(['draft-6', 'draft-7'] as const)('%s: reports the policy with the fewest requests left', async (standard) => {
    const policies = [
      { name: 'burst', limit: 10, window: '1s', algorithm: 'fixed-window' },
      { name: 'long', limit: 100, window: '1h', algorithm: 'fixed-window' },
    ];
    const clock = clockAt(0);
    app = await harness.start({
      limits: [{ policies, clock, headers: { standard, legacy: true }, logger: collectingLogger() }],
    });
    for (let second = 0; second < 8; second++) {
      for (let i = 0; i < 10; i++) await request(app.url).get('/').expect(200);
      clock.advance(1_000);
    }
    const res = await request(app.url).get('/').expect(200);
    expect(parseRateLimit(res.headers as Record<string, string>)).toMatchObject({ limit: 10, remaining: 9 });
    expect([res.headers['x-ratelimit-limit'], res.headers['x-ratelimit-remaining']]).toEqual(['10', '9']);
  });

  it('speaks draft-7 on request: a Dictionary that ratelimit-header-parser reads', async () => {
    app = await harness.start({ limits: [{ ...base, clock: clockAt(15_000), headers: { standard: 'draft-7' } }] });
    const res = await request(app.url).get('/').expect(200);
    expect(parseRateLimit(res.headers as Record<string, string>)).toMatchObject({ limit: 3, remaining: 2, used: 1 });
    const dictionary = parseDictionary(res.headers.ratelimit as string);
    expect([...dictionary].map(([k, [v]]) => [k, v])).toEqual([
      ['limit', 3],
      ['remaining', 2],
      ['reset', 45],
    ]);
    const [[quota, params]] = parseList(res.headers['ratelimit-policy'] as string) as Item[] as [Item];
    expect([quota, Object.fromEntries(params)]).toEqual([3, { w: 60 }]);
  });

  it('speaks draft-6 on request: three Integer fields that ratelimit-header-parser reads', async () => {
    app = await harness.start({ limits: [{ ...base, clock: clockAt(15_000), headers: { standard: 'draft-6' } }] });
    const res = await request(app.url).get('/').expect(200);
    expect(parseRateLimit(res.headers as Record<string, string>)).toMatchObject({ limit: 3, remaining: 2, used: 1 });
    expect(res.headers['ratelimit-reset']).toBe('45');
    expect(res.headers['ratelimit-policy']).toBe('3;w=60');
    expect(res.headers.ratelimit).toBeUndefined();
  });

  it('adds legacy X-RateLimit-* (Reset in Unix seconds) only when asked', async () => {
    app = await harness.start({
      limits: [{ ...base, clock: clockAt(15_000), headers: { standard: false, legacy: true } }],
    });
    const res = await request(app.url).get('/').expect(200);
    const parsed = parseRateLimit(res.headers as Record<string, string>);
    expect(parsed).toMatchObject({ limit: 3, remaining: 2 });
    expect(parsed?.reset?.getTime()).toBe(MINUTE_START + 60_000);
    expect(res.headers.ratelimit).toBeUndefined();
    expect(res.headers['ratelimit-policy']).toBeUndefined();
    const plain = await harness.start({ limits: [{ ...base }] });
    try {
      const defaults = await request(plain.url).get('/').expect(200);
      expect(Object.keys(defaults.headers).filter((h) => h.startsWith('x-ratelimit'))).toEqual([]);
    } finally {
      await plain.close();
    }
  });

  it.each([
    ['legacy', { standard: false, legacy: true }],
    ['draft-7', { standard: 'draft-7' }],
    ['draft-6', { standard: 'draft-6' }],
  ] as const)('states a burst as the %s limit, so remaining never exceeds it', async (_, headers) => {
    const bucket = { limit: 20, window: '1s', algorithm: 'token-bucket', burst: 40 };
    const policies = [{ name: 'steady', ...bucket }];
    app = await harness.start({
      limits: [{ policies, clock: clockAt(15_000), headers, logger: collectingLogger() }],
    });
    const first = parseRateLimit((await request(app.url).get('/').expect(200)).headers as Record<string, string>);
    expect(first).toMatchObject({ limit: 40, remaining: 39, used: 1 });
    const second = parseRateLimit((await request(app.url).get('/').expect(200)).headers as Record<string, string>);
    expect(second).toMatchObject({ limit: 40, remaining: 38, used: 2 });
  });

  it('writes each kind of single-value field with the strictest limiter that speaks it, even one written after another kind', async () => {
    const clock = clockAt(15_000);
    app = await harness.start({
      limits: [
        { ...base, limit: 2, clock, headers: { standard: false, legacy: true } },
        { ...base, limit: 100, clock, headers: { standard: 'draft-7' } },
        { ...base, limit: 50, clock, headers: { standard: 'draft-7' } },
        { ...base, limit: 80, clock, headers: { standard: 'draft-7', legacy: true } },
      ],
    });
    const res = await request(app.url).get('/').expect(200);
    // The draft-7 field was left out whenever a legacy limiter had written first.
    expect(res.headers.ratelimit).toBe('limit=50, remaining=49, reset=45');
    expect(res.headers['x-ratelimit-limit']).toBe('2');
    expect(res.headers['x-ratelimit-remaining']).toBe('1');
  });

  it('still sends Retry-After on a 429 with the standard fields turned off', async () => {
    app = await harness.start({
      limits: [{ ...base, limit: 1, clock: clockAt(15_000), headers: { standard: false } }],
    });
    await request(app.url).get('/').expect(200);
    const res = await request(app.url).get('/').expect(429);
    expect(res.headers['retry-after']).toBe('45');
    expect(res.headers.ratelimit).toBeUndefined();
  });
});
