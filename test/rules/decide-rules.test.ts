import { createMemoryStore, createRuleLimiters, decideRules } from '@sluice/core';
import { parseRules } from '@sluice/rules';
import { describe, expect, it } from 'vitest';

const rules = parseRules(`
domain: app
descriptors:
  - key: user
    rate_limit: { unit: hour, requests_per_unit: 1 }
  - key: route
    rate_limit: { unit: hour, requests_per_unit: 1 }
`);
const now = () => 1_700_000_000_000;

describe('decideRules on the memory store', () => {
  it('gives a refused request its charges back before a request asked in the same turn decides', async () => {
    const limiterOf = createRuleLimiters({ store: createMemoryStore(), clock: now });
    const match = (...descriptors: [string, string][]) =>
      rules.match(
        'app',
        descriptors.map(([key, value]) => [{ key, value }]),
      );
    // The route is spent: a request for it and the user is refused and must spend nothing.
    await decideRules(match(['route', '/a']), limiterOf, 1, now);
    const refused = decideRules(match(['user', 'u'], ['route', '/a']), limiterOf, 1, now);
    // Asked before the refused one's promise settles: it must find the user's quota whole.
    const next = decideRules(match(['user', 'u']), limiterOf, 1, now);
    expect((await refused).map((v) => v.decision.allowed)).toEqual([true, false]);
    expect((await next).map((v) => v.decision.allowed)).toEqual([true]);
  });
});
