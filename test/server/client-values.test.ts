import { parseRules } from '@sluice/rules';
import { createDecisionServer, type DecisionServer } from '@sluice/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnvoyClient, type OfficialRequest } from '../helpers/envoy-client.js';

// Envoy copies descriptor values from the request as they are (a header, the path) and by
// default lets a call the service refuses through: a value the service refused let a client
// past every limit of its call.
const rules = parseRules(`
domain: edge
descriptors:
  - key: remote_address
    rate_limit: { unit: hour, requests_per_unit: 3 }
  - key: header.x-team
    rate_limit: { unit: hour, requests_per_unit: 1 }
  - key: health
    rate_limit: { unlimited: true }
`);
const UINT32_MAX = 4_294_967_295;
let server: DecisionServer;
let envoy: ReturnType<typeof createEnvoyClient>;
let base: string;

beforeAll(async () => {
  server = createDecisionServer({ rules, grpcPort: 0, httpPort: 0, host: '127.0.0.1' });
  const { grpcPort, httpPort } = await server.listen();
  envoy = createEnvoyClient(`127.0.0.1:${grpcPort}`);
  base = `http://127.0.0.1:${httpPort}`;
});
afterAll(async () => {
  envoy?.close();
  await server?.close();
});

const entry = (key: string, value: string) => ({ entries: [{ key, value }] });
const codes = async (request: OfficialRequest) => {
  const { overall_code, statuses = [] } = await envoy.shouldRateLimit(request);
  return [overall_code, ...statuses.map((s) => s.code)];
};

describe('a value Envoy copied from the request', () => {
  it('of any length leaves the call decided, every limit of it enforced', async () => {
    const path = `/search?q=${'x'.repeat(2_000)}`;
    const request = { domain: 'edge', descriptors: [entry('remote_address', '10.0.0.1'), entry('path', path)] };
    for (let i = 0; i < 3; i++) expect(await codes(request)).toEqual(['OK', 'OK', 'OK']);
    expect(await codes(request)).toEqual(['OVER_LIMIT', 'OVER_LIMIT', 'OK']);
  });

  it('long, is counted as its own value', async () => {
    const [a, b] = ['a', 'b'].map((c) => entry('header.x-team', c.repeat(5_000)));
    expect(await codes({ domain: 'edge', descriptors: [a as never] })).toEqual(['OK', 'OK']);
    expect(await codes({ domain: 'edge', descriptors: [b as never] })).toEqual(['OK', 'OK']);
    expect(await codes({ domain: 'edge', descriptors: [a as never] })).toEqual(['OVER_LIMIT', 'OVER_LIMIT']);
  });

  it('empty (a header sent with no value) is counted as that value, over gRPC and JSON', async () => {
    const empty = { domain: 'edge', descriptors: [entry('header.x-team', '')] };
    expect(await codes(empty)).toEqual(['OK', 'OK']);
    const json = await fetch(`${base}/json`, { method: 'POST', body: JSON.stringify(empty) });
    // The second call of that value: over its limit of one, answered 429 as envoyproxy does.
    expect(json.status).toBe(429);
    expect(((await json.json()) as { overallCode: string }).overallCode).toBe('OVER_LIMIT');
  });
});

describe('a limit override of 0 a unit', () => {
  it('refuses every call and counts nothing, as a rule of 0 does', async () => {
    const blocked = {
      domain: 'edge',
      descriptors: [{ ...entry('remote_address', '10.0.0.9'), limit: { requests_per_unit: 0, unit: 'MINUTE' } }],
    };
    expect(await codes(blocked)).toEqual(['OVER_LIMIT', 'OVER_LIMIT']);
    expect(await codes(blocked)).toEqual(['OVER_LIMIT', 'OVER_LIMIT']);
    // Nothing was counted against the client's own limit.
    const own = { domain: 'edge', descriptors: [entry('remote_address', '10.0.0.9')] };
    const answer = await envoy.shouldRateLimit(own);
    expect([answer.overall_code, answer.statuses?.[0]?.limit_remaining]).toEqual(['OK', 2]);
  });
});

describe('an unlimited descriptor', () => {
  it('reports all the wire holds as remaining, as envoyproxy/ratelimit does', async () => {
    const answer = await envoy.shouldRateLimit({ domain: 'edge', descriptors: [entry('health', 'probe')] });
    expect(answer.statuses?.[0]).toMatchObject({ code: 'OK', limit_remaining: UINT32_MAX });
    expect(answer.statuses?.[0]?.current_limit).toBeUndefined();
    // A descriptor no rule matches still reports none.
    const other = await envoy.shouldRateLimit({ domain: 'edge', descriptors: [entry('nothing', 'x')] });
    expect(other.statuses?.[0]?.limit_remaining ?? 0).toBe(0);
  });
});
