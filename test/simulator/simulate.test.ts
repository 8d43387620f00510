import { algorithmNames, decide, type PolicyOptions, type State } from '@sluice/core';
import {
  type Arrival,
  boundaryAttack,
  compareWithExactLog,
  type Simulation,
  simulate,
  totals,
  worstWindow,
} from '@sluice/simulator';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseCliOptions } from '../../packages/simulator/src/report/cli-options.js';
import { ELASTIC_NEEDS_LOAD } from '../../packages/simulator/src/virtual-load.js';
import { policyOptions } from '../conformance/arbitraries.js';

/** Core's reference `decide`, run by hand over the same arrivals: what every store must match. */
function referenceReplay(traffic: readonly Arrival[], simulation: Simulation) {
  const policies = simulation.policies;
  const states = new Map<string, (State | undefined)[]>();
  return traffic.map(({ at, key, cost }) => {
    const current = states.get(key) ?? policies.map(() => undefined);
    const reply = decide(
      current,
      policies,
      policies.map((p) => p.capacity),
      cost,
      at,
    );
    if (reply.next !== undefined) states.set(key, reply.next);
    // A cost that even a fresh state refuses is told it can never pass (docs/algorithms.md).
    const never = policies.some((p) => !decide([undefined], [p], [p.capacity], cost, at).allowed);
    const waits = reply.outcomes.filter((o) => !o.allowed).map((o) => o.retryAfterMs);
    const retryAfterMs = reply.allowed ? 0 : never ? Number.POSITIVE_INFINITY : Math.max(...waits);
    const delayMs = reply.allowed ? Math.max(...reply.outcomes.map((o) => o.delayMs)) : 0;
    return { allowed: reply.allowed, retryAfterMs, delayMs };
  });
}

const trafficArb = fc
  .array(
    fc.record({
      gapMs: fc.integer({ min: 0, max: 3_000 }),
      key: fc.constantFrom('a', 'b', 'c'),
      cost: fc.integer({ min: 1, max: 4 }),
    }),
    { maxLength: 120 },
  )
  .map((steps) => {
    let at = 1_700_000_000_000;
    return steps.map(({ gapMs, key, cost }): Arrival => {
      at += gapMs;
      return { at, key, cost };
    });
  });

describe('simulate', () => {
  it("decides exactly as core's reference implementation for the same sequence", async () => {
    const policies = fc.array(
      fc.constantFrom(...algorithmNames).chain((algorithm) => policyOptions(algorithm)),
      { minLength: 1, maxLength: 2 },
    );
    await fc.assert(
      fc.asyncProperty(trafficArb, policies, async (traffic, list) => {
        const named = list.map((p, i): PolicyOptions => ({ ...p, name: `p${i}` }));
        const simulation = await simulate(traffic, { policies: named });
        const got = simulation.decisions.map(({ allowed, retryAfterMs, delayMs }) => ({
          allowed,
          retryAfterMs,
          delayMs,
        }));
        expect(got).toEqual(referenceReplay(traffic, simulation));
      }),
      { numRuns: 150 },
    );
  });

  it('shows the boundary attack: fixed windows let 2 × limit through, the exact log not one over', async () => {
    const traffic = boundaryAttack({ limit: 100, window: '1m', attacks: 3 });
    const fixed = await simulate(traffic, { limit: 100, window: '1m', algorithm: 'fixed-window' });
    const log = await simulate(traffic, { limit: 100, window: '1m', algorithm: 'sliding-window-log' });
    expect(worstWindow(fixed.decisions, 100, 60_000)).toMatchObject({ admitted: 200, excess: 100, ratio: 2 });
    expect(totals(fixed.decisions).refused).toBe(0);
    expect(worstWindow(log.decisions, 100, 60_000)).toMatchObject({ admitted: 100, excess: 0, ratio: 1 });
    expect(totals(log.decisions)).toMatchObject({ admitted: 300, refused: 300 });
    expect(compareWithExactLog(log.decisions, 100, 60_000).errorRate).toBe(0);
    expect(compareWithExactLog(fixed.decisions, 100, 60_000).wronglyAllowed).toBe(300);
  });

  it('rejects traffic out of time order, naming the entry', async () => {
    const traffic = [
      { at: 10, key: 'a', cost: 1 },
      { at: 5, key: 'a', cost: 1 },
    ];
    await expect(simulate(traffic, { limit: 1, window: '1s' })).rejects.toMatchObject({
      code: 'ERR_SLUICE_INVALID_TRAFFIC',
      message: expect.stringContaining('entry 1'),
    });
    await expect(simulate([{ at: 1, key: 'a', cost: 0 }], { limit: 1, window: '1s' })).rejects.toMatchObject({
      code: 'ERR_SLUICE_INVALID_TRAFFIC',
    });
  });

  // Past 2^50 a limiter's clock refuses the time: the run failed with a clock error naming no entry.
  it('rejects a time past 2^50 ms as bad traffic, naming the entry', async () => {
    const traffic = [
      { at: 1, key: 'a', cost: 1 },
      { at: 2 ** 50 + 1, key: 'a', cost: 1 },
    ];
    await expect(simulate(traffic, { limit: 1, window: '1s' })).rejects.toMatchObject({
      code: 'ERR_SLUICE_INVALID_TRAFFIC',
      message: expect.stringContaining('entry 1'),
    });
  });

  it('refuses a store or clock of its own, and bad limiter options as createLimiter does', async () => {
    const withClock = { limit: 1, window: '1s', clock: () => 0 } as unknown as Parameters<typeof simulate>[1];
    await expect(simulate([], withClock)).rejects.toMatchObject({ code: 'ERR_SLUICE_CONFLICTING_OPTIONS' });
    await expect(simulate([], { limit: 0, window: '1s' })).rejects.toMatchObject({ code: 'ERR_SLUICE_INVALID_LIMIT' });
  });

  it("refuses elastic throttling without its own load, which read this machine's event loop into the run", async () => {
    const traffic = boundaryAttack({ limit: 10, window: '1s', attacks: 1 });
    const elastic = { mode: 'elastic', maxOveragePercent: 50 } as const;
    const refusal = simulate(traffic, { limit: 10, window: '1s', throttle: elastic });
    await expect(refusal).rejects.toMatchObject({
      code: 'ERR_SLUICE_INVALID_OPTION',
      message: expect.stringContaining(ELASTIC_NEEDS_LOAD),
    });
    // The same rule, word for word, where the command line refuses elastic mode.
    expect(() => parseCliOptions(['--throttle', 'elastic'], '/')).toThrow(
      expect.objectContaining({
        code: 'ERR_SLUICE_INVALID_OPTION',
        message: expect.stringContaining(ELASTIC_NEEDS_LOAD),
      }),
    );
    // With a load of its own, elastic mode lends its overage and runs as it would live.
    const idle = await simulate(traffic, { limit: 10, window: '1s', throttle: { ...elastic, load: () => 0 } });
    const busy = await simulate(traffic, { limit: 10, window: '1s', throttle: { ...elastic, load: () => 1 } });
    const lent = (s: Simulation) => s.decisions.filter((d) => d.overLimit === 'elastic').length;
    expect(lent(idle)).toBeGreaterThan(0);
    expect(lent(busy)).toBe(0);
  });
});
