import { parseRules } from '@sluice/rules';
import request from 'supertest';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { harnesses, type RunningApp } from '../harness/index.js';
import { clockAt, collectingLogger, decisionOf } from '../helpers.js';

/** One rule per client address, for the rules-mode cases. */
const rules = parseRules(`
domain: api
descriptors:
  - key: remote_address
    policies: [{ name: per-client, limit: 5, window: 1m, algorithm: fixed-window }]
`);

describe.each(harnesses)("$name: what the user's functions return", (harness) => {
  let app: RunningApp | undefined;
  const unhandled: unknown[] = [];
  const record = (reason: unknown) => unhandled.push(reason);
  beforeEach(() => {
    unhandled.length = 0;
    process.on('unhandledRejection', record);
  });
  afterEach(async () => {
    process.off('unhandledRejection', record);
    await app?.close();
  });
  const oneEach = { algorithm: 'fixed-window', limit: 1, window: '1m', logger: collectingLogger() };

  /** One request answered 500, and the error the framework's error handling received. */
  async function failure(path = '/', tier = 'free'): Promise<unknown> {
    const running = app as RunningApp;
    const hits = running.hits();
    await request(running.url).get(path).set('x-tier', tier).timeout(2000).expect(500);
    await new Promise((resolve) => setImmediate(resolve));
    expect(unhandled).toEqual([]);
    expect(running.hits()).toBe(hits);
    return running.errors().at(-1);
  }

  it('an async onLimited that rejects reaches error handling: a 500, no hang, no unhandled rejection', async () => {
    const onLimited = async () => {
      throw new Error('onLimited failed');
    };
    app = await harness.start({ limits: [{ ...oneEach, onLimited, clock: clockAt(0) }] });
    await request(app.url).get('/').expect(200);
    await request(app.url).get('/').timeout(2000).expect(500);
    await new Promise((resolve) => setImmediate(resolve));
    expect(unhandled).toEqual([]);
    expect(app.errors()).toMatchObject([{ message: 'onLimited failed' }]);
  });

  // Each let the request through uncounted on Express and Fastify (`next()` and `done()` read a
  // falsy reason as no error), and left it unanswered on Koa.
  it.each([
    ['a key function that rejects with nothing', { key: () => Promise.reject() }],
    [
      'a key function that throws null',
      {
        key: () => {
          throw null;
        },
      },
    ],
    ['a cost function that rejects with null', { cost: () => Promise.reject(null) }],
    ['a skip function that rejects with 0', { skip: () => Promise.reject(0) }],
  ])('%s fails the request with a coded error', async (_, functions) => {
    app = await harness.start({ limits: [{ ...oneEach, ...functions, clock: clockAt(0) }] });
    expect(await failure()).toMatchObject({
      code: 'ERR_SLUICE_NO_ERROR_THROWN',
      message: expect.stringContaining('which is no error'),
    });
  });

  it('an onLimited that rejects with nothing fails the refusal with a coded error (it reached the handler)', async () => {
    app = await harness.start({ limits: [{ ...oneEach, onLimited: () => Promise.reject(), clock: clockAt(0) }] });
    await request(app.url).get('/').expect(200);
    expect(await failure()).toMatchObject({ code: 'ERR_SLUICE_NO_ERROR_THROWN' });
  });

  it('a numeric key (a user id) counts as its decimal string', async () => {
    app = await harness.start({ limits: [{ ...oneEach, key: async () => 42, clock: clockAt(0) }] });
    expect(decisionOf(await request(app.url).get('/').expect(200)).key).toBe('42');
    await request(app.url).get('/').expect(429);
  });

  it('a key function that returns no key fails the request with an error naming that function', async () => {
    app = await harness.start({ limits: [{ ...oneEach, key: () => undefined, clock: clockAt(0) }] });
    expect(await failure()).toMatchObject({
      code: 'ERR_SLUICE_INVALID_KEY',
      message: expect.stringMatching(/Your `key` function returned undefined for this request/),
    });
  });

  it('a cost function that returns 0 fails the request with an error naming that function', async () => {
    app = await harness.start({ limits: [{ ...oneEach, cost: () => 0, clock: clockAt(0) }] });
    expect(await failure()).toMatchObject({
      code: 'ERR_SLUICE_INVALID_COST',
      message: expect.stringMatching(/Your `cost` function returned 0 for this request/),
    });
  });

  it('in rules mode too, a cost function that returns 0 fails the request with an error naming that function', async () => {
    app = await harness.start({ limits: [{ rules, cost: () => 0, clock: clockAt(0), logger: collectingLogger() }] });
    expect(await failure()).toMatchObject({
      code: 'ERR_SLUICE_INVALID_COST',
      message: expect.stringMatching(/Your `cost` function returned 0 for this request/),
    });
  });

  it.each([
    ['skip', (answer: unknown) => ({ skip: () => answer })],
    ['allowList', (answer: unknown) => ({ allowList: async () => answer })],
  ])('a %s function counts the request unless it answers true, never judged by truthiness', async (name, option) => {
    for (const [answer, warned] of [
      [undefined, []],
      [null, []],
      ['false', ['WRN_SLUICE_NOT_BOOLEAN']],
      [1, ['WRN_SLUICE_NOT_BOOLEAN']],
    ] as const) {
      const logger = collectingLogger();
      app = await harness.start({ limits: [{ ...oneEach, ...option(answer), logger, clock: clockAt(0) }] });
      await request(app.url).get('/').expect(200);
      await request(app.url).get('/').expect(429);
      expect(logger.codes(), `${name} answering ${String(answer)}`).toEqual(warned);
      await app.close();
      app = undefined;
    }
  });

  it.each([
    ['nothing', () => undefined, 'undefined'],
    ['a number, late', async () => 42, '42'],
    ['an object JSON cannot write', () => ({ count: 1n }), 'an object'],
  ])(
    'a message function returning %s fails the refusal with an error naming that function',
    async (_label, message, shown) => {
      app = await harness.start({ limits: [{ ...oneEach, message, clock: clockAt(0) }] });
      await request(app.url).get('/').expect(200);
      expect(await failure()).toMatchObject({
        code: 'ERR_SLUICE_INVALID_MESSAGE',
        message: expect.stringContaining(`Your \`message\` function returned ${shown} for this request`),
      });
    },
  );

  it('in rules mode too, a skip function answering other than true or false counts the request', async () => {
    const logger = collectingLogger();
    app = await harness.start({ limits: [{ rules, skip: () => ({}), clock: clockAt(0), logger }] });
    for (let i = 0; i < 5; i++) await request(app.url).get('/').expect(200);
    await request(app.url).get('/').expect(429);
    expect(logger.codes()).toEqual(['WRN_SLUICE_NOT_BOOLEAN']);
  });

  it("a skip answering 'false' is warned about even after a hook's failure was", async () => {
    const logger = collectingLogger();
    const onExceeded = () => {
      throw new Error('hook broke');
    };
    let answer: unknown = false;
    const skip = () => answer;
    app = await harness.start({ limits: [{ ...oneEach, skip, onExceeded, logger, clock: clockAt(0) }] });
    await request(app.url).get('/').expect(200);
    await request(app.url).get('/').expect(429);
    expect(logger.codes()).toEqual(['WRN_SLUICE_CALLBACK_FAILED']);
    answer = 'false';
    await request(app.url).get('/').expect(429);
    expect(logger.codes()).toEqual(['WRN_SLUICE_CALLBACK_FAILED', 'WRN_SLUICE_NOT_BOOLEAN']);
  });

  it('a tier missing from the map a policies function reads blames that function, not option `policies`', async () => {
    const tiers: Record<string, unknown[]> = { free: [{ name: 'free', limit: 5, window: '1m' }] };
    const policies = (req: unknown) => tiers[harness.header(req, 'x-tier') as string];
    app = await harness.start({ limits: [{ policies, logger: collectingLogger(), clock: clockAt(0) }] });
    await request(app.url).get('/').set('x-tier', 'free').expect(200);
    const error = await failure('/', 'gold');
    expect(error).toMatchObject({
      code: 'ERR_SLUICE_INVALID_POLICIES',
      message: expect.stringMatching(/Your `policies` function returned undefined for this request.*tiers\[plan\]/),
    });
    expect((error as Error).message).not.toMatch(/Option `policies`/);
  });

  it('a policies function returning an invalid policy names the function and the field', async () => {
    const policies = () => [{ name: 'api', limit: -1, window: '1m' }];
    app = await harness.start({ limits: [{ policies, logger: collectingLogger(), clock: clockAt(0) }] });
    expect(await failure()).toMatchObject({
      code: 'ERR_SLUICE_INVALID_LIMIT',
      message: expect.stringMatching(/Your `policies` function returned policies that are not valid.*limit/),
    });
  });
});
