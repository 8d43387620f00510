import type { StoreRequest } from '@sluice/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  applySync,
  decideLocally,
  decideOneLocally,
  newClientCounts,
  ownCount,
  reusedReply,
} from '../../packages/redis/src/local-first/client-counts.js';
import { policyArb, START } from '../core/support/meter.js';

// Local-first decides a one-policy client at once on a path of its own, which writes into a
// reply and a view it reuses. It must decide, and count, exactly as the general path does.

const stepArb = (windowMs: number) =>
  fc.record({
    advance: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: windowMs }), fc.integer({ min: -windowMs, max: -1 })),
    cost: fc.oneof(fc.constant(1), fc.integer({ min: 0, max: 4 })),
    share: fc.constantFrom(1, 0.5, 0.25),
    sync: fc.option(fc.tuple(fc.nat({ max: 30 }), fc.nat({ max: 30 })), { freq: 8 }),
  });

describe('local-first: the one-policy path', () => {
  it.each(['fixed-window', 'sliding-window-counter'] as const)(
    '%s: decides and counts as the general path, through syncs, refusals, shares and clock steps back',
    (variant) => {
      fc.assert(
        fc.property(
          policyArb(variant).chain((policy) => fc.tuple(fc.constant(policy), fc.array(stepArb(policy.windowMs)))),
          ([policy, steps]) => {
            const request: StoreRequest = {
              namespace: 'n',
              key: 'k',
              policies: [policy],
              capacities: [policy.capacity],
              cost: 1,
              now: START,
            };
            const one = newClientCounts(request, START);
            const general = newClientCounts(request, START);
            const into = reusedReply();
            let now = START;
            for (const { advance, cost, share, sync } of steps) {
              now = Math.max(0, now + advance);
              if (sync !== null) {
                // What a sync found: the fleet's totals of the current window and the one before.
                const window = Math.floor(now / policy.windowMs);
                for (const counts of [one, general]) {
                  const own = counts.counts[0] as (typeof counts.counts)[0];
                  const sent = [ownCount(own, window), ownCount(own, window - 1)] as const;
                  applySync(policy, own, window, [sync[0] + sent[0], sync[1] + sent[1]], sent);
                }
              }
              const asked = { ...request, cost, now };
              const expected = decideLocally(general, asked, now, share);
              const got = decideOneLocally(one, asked, now, share, into);
              expect({ allowed: got.allowed, now: got.now }).toEqual({ allowed: expected.allowed, now: expected.now });
              expect(got.outcomes[0]).toEqual(expected.outcomes[0]);
              expect(one.counts).toEqual(general.counts);
              expect(one.lastNow).toBe(general.lastNow);
            }
          },
        ),
        { numRuns: 300 },
      );
    },
  );
});
