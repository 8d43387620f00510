import { parseRules } from '@sluice/rules';
import { createDecisionServer, type DecisionServer } from '@sluice/server';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createEnvoyClient } from '../helpers/envoy-client.js';

const rules = parseRules(`
domain: edge
descriptors:
  - key: remote_address
    rate_limit: { name: per-ip, unit: hour, requests_per_unit: 3 }
  - key: ip
    policies:
      - { name: short, limit: 2, window: 1m, algorithm: fixed-window }
      - { name: long, limit: 2, window: 1h, algorithm: fixed-window }
`);
let server: DecisionServer;
let envoy: ReturnType<typeof createEnvoyClient>;
let json = '';
const now = Date.UTC(2026, 11, 7, 12, 0, 22);

beforeAll(async () => {
  server = createDecisionServer({
    rules,
    grpcPort: 0,
    httpPort: 0,
    host: '127.0.0.1',
    headers: { standard: 'draft-11' },
    clock: () => now,
    log: { line() {}, warn() {} },
  });
  const { grpcPort, httpPort } = await server.listen();
  envoy = createEnvoyClient(`127.0.0.1:${grpcPort}`);
  json = `http://127.0.0.1:${httpPort}/json`;
});
afterAll(async () => {
  envoy?.close();
  await server?.close();
});

const descriptor = (key: string, value: string) => ({ entries: [{ key, value }] });
const ask = (...descriptors: ReturnType<typeof descriptor>[]) => envoy.shouldRateLimit({ domain: 'edge', descriptors });
const figures = async (...descriptors: ReturnType<typeof descriptor>[]) => {
  const answer = await ask(...descriptors);
  const statuses = (answer.statuses ?? []).map(
    (s) => `${s.code} ${s.limit_remaining} ${s.duration_until_reset?.seconds ?? 0}s`,
  );
  const retryAfter = answer.response_headers_to_add?.find((h) => h.key === 'Retry-After')?.value;
  return { overall: answer.overall_code, statuses, retryAfter };
};

// Two policies alike in limit and count: the status named the first's unit (MINUTE) beside the
// other's reset (337 s), which no minute can be.
it('names the unit of the policy whose remaining and reset it reports, among policies alike in limit and count', async () => {
  const answer = await ask(descriptor('ip', 'a'));
  const status = answer.statuses?.[0];
  expect(status?.current_limit).toMatchObject({ requests_per_unit: 2, unit: 'HOUR', name: 'long' });
  expect(Number(status?.duration_until_reset?.seconds)).toBe(3600 - 22);
});

// Envoy sends a descriptor twice when a route's and its virtual host's `rate_limits` both name
// it. Decided one after the other, the second copy was refused over the first's charge, which
// was then given back, and said the client had nothing left.
it("charges a descriptor sent twice once, at both copies' cost, and answers both copies alike", async () => {
  const twice = [descriptor('remote_address', 'a'), descriptor('remote_address', 'a')];
  expect(await figures(...twice)).toEqual({
    overall: 'OK',
    statuses: ['OK 1 3578s', 'OK 1 3578s'],
    retryAfter: undefined,
  });
  // One left: two copies do not fit, and the client is told it still has one.
  const refused = await figures(...twice);
  expect(refused.overall).toBe('OVER_LIMIT');
  expect(refused.statuses).toEqual(['OVER_LIMIT 1 3578s', 'OVER_LIMIT 1 3578s']);
  expect((await figures(descriptor('remote_address', 'a'))).statuses).toEqual(['OK 0 3578s']);
});

it('refuses more copies of a descriptor than its limit holds as a request that can never pass, charging nothing', async () => {
  const four = Array.from({ length: 4 }, () => descriptor('remote_address', 'b'));
  const refused = await figures(...four);
  expect(refused).toEqual({ overall: 'OVER_LIMIT', statuses: Array(4).fill('OVER_LIMIT 3 0s'), retryAfter: undefined });
  expect((await figures(descriptor('remote_address', 'b'))).statuses).toEqual(['OK 2 3578s']);
});

// Summed past the largest cost core takes, the copies failed the call INTERNAL (500), which
// Envoy lets through by default; one copy of such a cost is refused as never passing.
it('refuses copies whose costs sum past 2^53 - 1 as never passing, not as a failure', async () => {
  const copy = { entries: [{ key: 'remote_address', value: 'c' }], hitsAddend: '4503599627370496' };
  const res = await fetch(json, {
    method: 'POST',
    body: JSON.stringify({ domain: 'edge', descriptors: [copy, copy] }),
  });
  expect(res.status).toBe(429);
  const body = (await res.json()) as {
    statuses: { code: string }[];
    dynamicMetadata: { sluice: { statuses: { retryAfterMs: number }[] } };
  };
  expect(body.statuses.map((s) => s.code)).toEqual(['OVER_LIMIT', 'OVER_LIMIT']);
  expect(body.dynamicMetadata.sluice.statuses[0]?.retryAfterMs).toBe(-1);
});
