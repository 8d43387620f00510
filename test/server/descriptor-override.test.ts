import { parseRules } from '@sluice/rules';
import { createDecisionServer, type DecisionServer } from '@sluice/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnvoyClient, type OfficialRequest } from '../helpers/envoy-client.js';

const rules = parseRules(`
domain: d
descriptors:
  - key: k
    rate_limit: { unit: second, requests_per_unit: 2 }
  - key: shadow
    shadow_mode: true
    rate_limit: { unit: hour, requests_per_unit: 1 }
  - key: free
    rate_limit: { unlimited: true }
  - key: copies
    rate_limit: { unit: hour, requests_per_unit: 100 }
`);
let server: DecisionServer;
let envoy: ReturnType<typeof createEnvoyClient>;
let httpPort = 0;
let run = 0;
const fresh = (label: string) => `${label}-${++run}-${process.pid}`;

beforeAll(async () => {
  server = createDecisionServer({ rules, grpcPort: 0, httpPort: 0, host: '127.0.0.1', log: { line() {}, warn() {} } });
  const ports = await server.listen();
  const { grpcPort } = ports;
  httpPort = ports.httpPort;
  envoy = createEnvoyClient(`127.0.0.1:${grpcPort}`);
});
afterAll(async () => {
  envoy?.close();
  await server?.close();
});

type Limit = { requests_per_unit: number; unit: string };
const overridden = (entries: { key: string; value: string }[], limit: Limit, domain = 'd'): OfficialRequest => ({
  domain,
  descriptors: [{ entries, limit }],
});
const codes = async (request: OfficialRequest, times: number) => {
  const answers = [];
  for (let i = 0; i < times; i++) answers.push((await envoy.shouldRateLimit(request)).overall_code);
  return answers;
};

describe('a descriptor limit override, as envoyproxy/ratelimit applies it', () => {
  it('limits a descriptor no rule matches in a known domain (it was ignored)', async () => {
    const perHour = { requests_per_unit: 1, unit: 'HOUR' };
    const entries = [
      { key: 'nomatch', value: fresh('x') },
      { key: 'deeper', value: 'y' },
    ];
    const first = await envoy.shouldRateLimit(overridden(entries, perHour));
    expect(first.overall_code).toBe('OK');
    expect(first.statuses?.[0]?.current_limit).toMatchObject({ requests_per_unit: 1, unit: 'HOUR' });
    expect(await codes(overridden(entries, perHour), 2)).toEqual(['OVER_LIMIT', 'OVER_LIMIT']);
    // The counter is the descriptor's entries: another value counts apart.
    expect(await codes(overridden([{ key: 'nomatch', value: fresh('x') }], perHour), 1)).toEqual(['OK']);
    // And an `unlimited` rule's descriptor is limited by an override too.
    expect(await codes(overridden([{ key: 'free', value: fresh('f') }], perHour), 2)).toEqual(['OK', 'OVER_LIMIT']);
  });

  // Regression: proto3 JSON gives an enum as its name or its number; `unit: 3` was refused.
  it("takes an override's unit in /json as its number as well as its name", async () => {
    const postOverride = (unit: string | number, value: string) =>
      fetch(`http://127.0.0.1:${httpPort}/json`, {
        method: 'POST',
        body: JSON.stringify({
          domain: 'd',
          descriptors: [{ entries: [{ key: 'nomatch', value }], limit: { requestsPerUnit: 1, unit } }],
        }),
      });
    const value = fresh('json-unit');
    const first = await postOverride(3, value);
    expect(first.status).toBe(200);
    expect(await first.json()).toMatchObject({ statuses: [{ currentLimit: { requestsPerUnit: 1, unit: 'HOUR' } }] });
    // The same override, named: one count.
    expect((await postOverride('HOUR', value)).status).toBe(429);
    for (const bad of [0, 7, 2.5, -1]) expect((await postOverride(bad, fresh('bad-unit'))).status).toBe(400);
  });

  it("counts an override in another unit than the rule's apart from the rule's own count", async () => {
    const entries = [{ key: 'k', value: fresh('k') }];
    expect(await codes(overridden(entries, { requests_per_unit: 1, unit: 'HOUR' }), 2)).toEqual(['OK', 'OVER_LIMIT']);
    // The rule's own 2 a second have not been touched by the hour's count.
    const own = await envoy.shouldRateLimit({ domain: 'd', descriptors: [{ entries }] });
    expect(own.overall_code).toBe('OK');
    expect(own.statuses?.[0]?.limit_remaining).toBe(1);
  });

  it('limits nothing in a domain the rules do not know', async () => {
    const answers = [];
    for (let i = 0; i < 3; i++)
      answers.push(
        await envoy.shouldRateLimit(
          overridden([{ key: 'k', value: 'v' }], { requests_per_unit: 1, unit: 'HOUR' }, 'elsewhere'),
        ),
      );
    expect(answers.map((a) => a.overall_code)).toEqual(['OK', 'OK', 'OK']);
    expect(answers[0]?.statuses?.[0]?.current_limit).toBeUndefined();
  });

  it('turns shadow mode off on a shadow_mode rule (it kept answering OK)', async () => {
    const request = overridden([{ key: 'shadow', value: fresh('s') }], { requests_per_unit: 1, unit: 'MINUTE' });
    const [first, second] = [await envoy.shouldRateLimit(request), await envoy.shouldRateLimit(request)];
    expect(first.overall_code).toBe('OK');
    expect(second.overall_code).toBe('OVER_LIMIT');
    expect(second.statuses?.[0]?.code).toBe('OVER_LIMIT');
    expect(JSON.stringify(second.dynamic_metadata ?? {})).not.toContain('shadow');
    // Without the override the rule is in shadow mode again.
    const plain = { domain: 'd', descriptors: [{ entries: [{ key: 'shadow', value: fresh('s') }] }] };
    expect(await codes(plain, 3)).toEqual(['OK', 'OK', 'OK']);
  });
});

// The overrides a rule keeps were evicted by age of insertion: after 64 others, an override used
// by every call could be rebuilt between two copies of one descriptor, and the copies were
// decided apart (the second refused over the first's charge, told to retry).
it('decides two copies of an overridden descriptor as one charge however many overrides came before', async () => {
  const limited = (value: string, requests_per_unit: number) => ({
    entries: [{ key: 'copies', value }],
    limit: { requests_per_unit, unit: 'MINUTE' },
  });
  // The override the copies use first, then 63 others: it is the oldest of the 64 the rule keeps.
  await envoy.shouldRateLimit({ domain: 'd', descriptors: [limited(fresh('first'), 1)] });
  for (let i = 0; i < 63; i++)
    await envoy.shouldRateLimit({ domain: 'd', descriptors: [limited(fresh('prefill'), 500 + i)] });
  const copy = limited(fresh('copies'), 1);
  const answer = await envoy.shouldRateLimit({ domain: 'd', descriptors: [copy, limited(fresh('other'), 999), copy] });
  // Two of a limit of one never fit: both copies refused alike, nothing charged.
  expect(answer.statuses?.map((s) => `${s.code} ${s.limit_remaining}`)).toEqual([
    'OVER_LIMIT 1',
    'OK 999',
    'OVER_LIMIT 1',
  ]);
});
