import { parseRules } from '@sluice/rules';
import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import { harnesses, type RunningApp } from './harness/index.js';
import { clockAt, collectingLogger, parseItems } from './helpers.js';

const names = (field: string | undefined): string[] => parseItems(field).map((item) => item.name);

// Regression: two limiters, or two rules, whose policies had one name (the default `10-per-1m`,
// or `per-minute` for every Envoy rule counted by the minute) put two items of that name in one
// response's RateLimit fields, which no client can tell apart, and nothing said so.
describe.each(harnesses)('$name: one policy name from two limiters on one response', (harness) => {
  let app: RunningApp | undefined;
  afterEach(() => app?.close());

  it('warns once, naming the policy, and still sends every item', async () => {
    const logger = collectingLogger();
    const limit = { algorithm: 'fixed-window', limit: 10, window: '1m', clock: clockAt(0), logger };
    app = await harness.start({ limits: [limit], routeLimits: { '/limited': limit } });
    for (let i = 0; i < 2; i++) {
      const res = await request(app.url).get('/limited').expect(200);
      expect(names(res.headers['ratelimit-policy'])).toEqual(['10-per-1m', '10-per-1m']);
      expect(names(res.headers.ratelimit)).toEqual(['10-per-1m', '10-per-1m']);
    }
    // A route with one limiter sends the name once.
    await request(app.url).get('/').expect(200);
    expect(logger.codes()).toEqual(['WRN_SLUICE_DUPLICATE_POLICY_NAME']);
    expect(logger.messages[0]).toContain('"10-per-1m"');
  });

  it('says nothing of names that differ, even once some name is shared elsewhere in the process', async () => {
    const logger = collectingLogger();
    const shared = { algorithm: 'fixed-window', limit: 10, window: '1m', clock: clockAt(0), logger };
    app = await harness.start({
      limits: [shared],
      routeLimits: { '/limited': { ...shared, limit: 5 } },
    });
    const res = await request(app.url).get('/limited').expect(200);
    expect(names(res.headers.ratelimit)).toEqual(['10-per-1m', '5-per-1m']);
    expect(logger.messages).toEqual([]);
  });

  /** Two rules counted by the minute, on every request and on `/other`, named as given. */
  const startRules = async (logger: ReturnType<typeof collectingLogger>, named: [string, string] | []) => {
    const [client, path] = named.map((name) => `, name: ${name}`);
    const rules = parseRules(`
domain: api
descriptors:
  - key: remote_address
    rate_limit: { unit: minute, requests_per_unit: 10${client ?? ''} }
  - key: path
    value: /other
    rate_limit: { unit: minute, requests_per_unit: 5${path ?? ''} }
`);
    return harness.start({
      limits: [{ rules, descriptors: [['remote_address'], ['path']], clock: clockAt(0), logger }],
    });
  };

  it('warns of two rules that one request matches, both named `per-minute` by default', async () => {
    const logger = collectingLogger();
    app = await startRules(logger, []);
    const plain = await request(app.url).get('/').expect(200);
    expect(names(plain.headers.ratelimit)).toEqual(['per-minute']);
    expect(logger.messages).toEqual([]);
    const both = await request(app.url).get('/other').expect(200);
    expect(names(both.headers.ratelimit)).toEqual(['per-minute', 'per-minute']);
    expect(logger.codes()).toEqual(['WRN_SLUICE_DUPLICATE_POLICY_NAME']);
  });

  it('says nothing of two rules whose policies are named apart', async () => {
    const logger = collectingLogger();
    app = await startRules(logger, ['per-client', 'per-path']);
    const both = await request(app.url).get('/other').expect(200);
    expect(names(both.headers.ratelimit)).toEqual(['per-client', 'per-path']);
    expect(logger.messages).toEqual([]);
  });
});
