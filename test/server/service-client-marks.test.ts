import { createLimiter, type Decision, type PolicyOptions } from '@sluice/core';
import { parseRules } from '@sluice/rules';
import { createDecisionServer, createServiceClient, type DecisionServer } from '@sluice/server';
import { afterEach, describe, expect, it } from 'vitest';
import { manualClock } from '../helpers/clock.js';

const rules = parseRules(`
domain: d
descriptors:
  - key: plain
    rate_limit: { unit: hour, requests_per_unit: 1 }
  - key: shadowed
    rate_limit: { unit: hour, requests_per_unit: 1 }
    shadow_mode: true
  - key: soft
    policies: [{ name: soft, limit: 1, window: 1h }]
    throttle: { mode: soft, overagePercent: 100 }
  - key: quota-a
    rate_limit: { unit: hour, requests_per_unit: 1 }
    quota_mode: true
  - key: quota-b
    rate_limit: { unit: hour, requests_per_unit: 2 }
    quota_mode: true
`);
const quiet = { line() {}, warn() {} };

// The Node client read only a status's code and figures: a pass that the service's rules let
// through over the limit (a shadow-mode rule, the service's shadow mode, a soft overage) came
// back unmarked, so an app could not tell it from a request within its limit.
describe("the Node client marks what the service's rules let through over the limit", () => {
  const ended: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const end of ended.splice(0).reverse()) await end();
  });

  /** Two decisions on the policies `names` (each a descriptor's key), through a real `sluice` service. */
  async function twoDecisions(names: string | string[], shadowMode = false): Promise<Decision[]> {
    const server: DecisionServer = createDecisionServer({
      rules,
      grpcPort: 0,
      httpPort: 0,
      host: '127.0.0.1',
      shadowMode,
      clock: manualClock(1_700_000_000_000),
      log: quiet,
    });
    const { grpcPort } = await server.listen();
    const client = createServiceClient({ address: `127.0.0.1:${grpcPort}`, domain: 'd', logger: quiet });
    ended.push(
      () => server.close(),
      () => client.close(),
    );
    const limits: Record<string, number> = { 'quota-b': 2 };
    const policies: PolicyOptions[] = [names].flat().map((name) => ({ name, limit: limits[name] ?? 1, window: '1h' }));
    // The first call opens the connection, which on a loaded machine outlasts the default 100 ms.
    const limiter = createLimiter({ policies, store: client, storeTimeoutMs: 10_000, logger: quiet });
    return [await limiter.consume('10.0.0.1'), await limiter.consume('10.0.0.1')];
  }

  it("a shadow-mode rule's pass over its limit is marked shadow", async () => {
    const [first, second] = await twoDecisions('shadowed');
    expect(first).toMatchObject({ allowed: true, remaining: 0 });
    expect(first?.overLimit).toBeUndefined();
    expect(second).toMatchObject({ allowed: true, remaining: 0, retryAfterMs: 0, overLimit: 'shadow' });
  });

  it("the service's shadow mode: the pass is marked, its policy shown refused with its wait", async () => {
    const [first, second] = await twoDecisions('plain', true);
    expect(first?.overLimit).toBeUndefined();
    expect(second).toMatchObject({ allowed: true, retryAfterMs: 0, overLimit: 'shadow' });
    expect(second?.policies[0]).toMatchObject({ allowed: false, remaining: 0 });
    expect(second?.policies[0]?.retryAfterMs).toBeGreaterThan(0);
  });

  it("a pass into a soft rule's overage is marked soft", async () => {
    const [first, second] = await twoDecisions('soft');
    expect(first?.overLimit).toBeUndefined();
    expect(second).toMatchObject({ allowed: true, remaining: 0, overLimit: 'soft' });
  });

  // Regression: a quota_mode pass answers OK over a status OVER_LIMIT too, and was marked shadow.
  it('a quota_mode pass, one quota rule over its limit, is no shadow pass: unmarked', async () => {
    const [, second] = await twoDecisions(['quota-a', 'quota-b']);
    expect(second).toMatchObject({ allowed: true, retryAfterMs: 0 });
    expect(second?.overLimit).toBeUndefined();
    expect(second?.policies.map((p) => p.remaining)).toEqual([0, 0]);
  });

  it('a plain rule refuses, unmarked, as before', async () => {
    const [, second] = await twoDecisions('plain');
    expect(second).toMatchObject({ allowed: false });
    expect(second?.overLimit).toBeUndefined();
  });
});
