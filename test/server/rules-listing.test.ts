import { parseRules } from '@sluice/rules';
import { createDecisionServer, type DecisionServer } from '@sluice/server';
import { afterEach, expect, it } from 'vitest';

const document = `
domain: edge
descriptors:
  - key: remote_address
    rate_limit: { unit: minute, requests_per_unit: 3 }
  - key: blocked
    rate_limit: { unit: second, requests_per_unit: 0 }
  - key: free
    rate_limit: { unlimited: true }
  - key: path
    value: /api*
    descriptors:
      - key: user
        shadow_mode: true
        rate_limit: { name: user-api, unit: hour, requests_per_unit: 100 }
  - key: tier
    value: gold
    policies:
      - { name: burst, limit: 10, window: 1s, algorithm: token-bucket, burst: 20 }
      - { name: daily, limit: 10000, window: 1d }
`;

let server: DecisionServer | undefined;
afterEach(() => server?.close());

async function serving() {
  const rules = parseRules(document, { source: 'rules/edge.yaml' });
  server = createDecisionServer({ rules, grpcPort: 0, httpPort: 0, host: '127.0.0.1', log: { line() {}, warn() {} } });
  const { httpPort } = await server.listen();
  return { url: `http://127.0.0.1:${httpPort}`, rules };
}

// The metrics name a rule's limiter by its id (`sluice_limiter="r.jllN9xelOjapOYLH"`), and
// nothing the service served said which rule that was; envoyproxy/ratelimit lists its rules
// on `/rlconfig`.
it('lists the rules served on GET /rlconfig, one a line, each with the limiter /metrics names it by', async () => {
  const { url, rules } = await serving();
  const res = await fetch(`${url}/rlconfig`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
  const id = (key: string) => rules.rules.find((rule) => rule.path.at(-1)?.key === key)?.id;
  expect((await res.text()).split('\n')).toEqual([
    `edge.remote_address: unit=MINUTE requests_per_unit=3, shadow_mode: false, limiter: ${id('remote_address')}, at: rules/edge.yaml:4`,
    `edge.blocked: unit=SECOND requests_per_unit=0, shadow_mode: false, limiter: ${id('blocked')}, at: rules/edge.yaml:6`,
    `edge.free: unlimited, shadow_mode: false, limiter: ${id('free')}, at: rules/edge.yaml:8`,
    `edge.path_/api*.user: unit=HOUR requests_per_unit=100, shadow_mode: true, name: user-api, limiter: ${id('user')}, at: rules/edge.yaml:13`,
    `edge.tier_gold: burst=10/1s(token-bucket burst 20) daily=10000/1d, shadow_mode: false, limiter: ${id('tier')}, at: rules/edge.yaml:16`,
    '',
  ]);

  await fetch(`${url}/json`, {
    method: 'POST',
    body: JSON.stringify({
      domain: 'edge',
      descriptors: [{ entries: [{ key: 'remote_address', value: '192.0.2.1' }] }],
    }),
  });
  const metrics = await (await fetch(`${url}/metrics`)).text();
  expect(metrics).toContain(`sluice_decisions_total{sluice_limiter="${id('remote_address')}"`);
});

it('answers HEAD /rlconfig as GET without the body, and refuses other methods with 405', async () => {
  const { url } = await serving();
  const head = await fetch(`${url}/rlconfig`, { method: 'HEAD' });
  expect(head.status).toBe(200);
  expect(await head.text()).toBe('');
  const post = await fetch(`${url}/rlconfig`, { method: 'POST' });
  expect(post.status).toBe(405);
  expect(post.headers.get('allow')).toBe('GET, HEAD');
});
