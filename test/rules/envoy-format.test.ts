import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type Descriptor, parseRules, type RuleSet } from '@sluice/rules';
import { describe, expect, it } from 'vitest';

const fixture = (name: string): RuleSet => {
  const path = fileURLToPath(new URL(`fixtures/${name}`, import.meta.url));
  return parseRules(readFileSync(path, 'utf8'), { source: name });
};
const d = (...pairs: [string, string][]): Descriptor => pairs.map(([key, value]) => ({ key, value }));

describe('envoyproxy/ratelimit documents load unchanged and mean the same', () => {
  it('README example 2: nested and bare keys match at the same depth only', () => {
    const rules = fixture('envoy-messaging.yaml');
    const marketing = rules.matchOne('messaging', d(['message_type', 'marketing'], ['to_number', '2061234567']));
    expect(marketing?.rule.rateLimit).toEqual({ unit: 'day', requestsPerUnit: 5, windowMs: 86_400_000 });
    expect(marketing?.rule.policies).toEqual([
      { name: 'per-day', limit: 5, window: 86_400_000, algorithm: 'fixed-window' },
    ]);
    // A bare key counts per distinct value: two numbers, two keys.
    const other = rules.matchOne('messaging', d(['message_type', 'marketing'], ['to_number', '2069999999']));
    expect(other?.rule).toBe(marketing?.rule);
    expect(other?.key).not.toBe(marketing?.key);
    const any = rules.matchOne('messaging', d(['to_number', '2061234567']));
    expect(any?.rule.rateLimit?.requestsPerUnit).toBe(100);
    // Depth 1 has no limit on `message_type`, and a deeper descriptor never falls back up.
    expect(rules.matchOne('messaging', d(['message_type', 'marketing']))).toBeUndefined();
    expect(rules.matchOne('messaging', d(['to_number', '1'], ['message_type', 'marketing']))).toBeUndefined();
    expect(rules.matchOne('other', d(['to_number', '1']))).toBeUndefined();
    expect(rules.matchOne('messaging', [])).toBeUndefined();
  });

  it('README example 3: key and value before key alone; a limit of 0 blocks without counting', () => {
    const rules = fixture('envoy-edge.yaml');
    const [client, blocked] = rules.match('edge_proxy_per_ip', [
      d(['remote_address', '203.0.113.7']),
      d(['remote_address', '50.0.0.5']),
    ]);
    expect(client?.rule.rateLimit).toEqual({ unit: 'second', requestsPerUnit: 10, windowMs: 1000 });
    expect(client?.key).toBe('11:203.0.113.7');
    expect(blocked?.rule.blocked).toBe(true);
    expect(blocked?.rule.policies).toEqual([]);
    expect(blocked?.key).toBe('*');
  });

  it('units are case-insensitive; wildcards come after exact values and before the bare key', () => {
    const rules = fixture('envoy-features.yaml');
    const limitOf = (descriptor: Descriptor) => rules.matchOne('features', descriptor)?.rule.rateLimit;
    expect(limitOf(d(['source_cluster', 'proxy'], ['destination_cluster', 'bb']))).toEqual({
      unit: 'minute',
      requestsPerUnit: 10,
      windowMs: 60_000,
    });
    expect(limitOf(d(['source_cluster', 'proxy'], ['destination_cluster', 'cc']))?.requestsPerUnit).toBe(20);
    expect(limitOf(d(['path', '/foo/bar']))?.requestsPerUnit).toBe(10);
    expect(limitOf(d(['path', '/foo/baz']))?.requestsPerUnit).toBe(20);
    expect(limitOf(d(['path', '/foo']))).toBeUndefined();
    expect(limitOf(d(['path', '/shared/a/items']))?.requestsPerUnit).toBe(100);
    expect(limitOf(d(['path', '/shared/']))?.requestsPerUnit).toBe(100);
    expect(limitOf(d(['path', '/shared']))).toBeUndefined();
  });

  it('a wildcard counts per value unless share_threshold makes every match share one counter', () => {
    const rules = fixture('envoy-features.yaml');
    const keyOf = (value: string) => rules.matchOne('features', d(['path', value]))?.key;
    expect(keyOf('/foo/a')).not.toBe(keyOf('/foo/b'));
    expect(keyOf('/shared/a/items')).toBe('*');
    expect(keyOf('/shared/b/items')).toBe('*');
  });

  it('share_threshold on a wildcard with no limit of its own shares the counter of the rules below it (it was ignored)', () => {
    const rules = parseRules(
      [
        'domain: d',
        'descriptors:',
        '  - key: files',
        "    value: 'reports/*'",
        '    share_threshold: true',
        '    descriptors:',
        '      - key: user',
        '        rate_limit: { unit: minute, requests_per_unit: 5 }',
        '  - key: files',
        "    value: 'images/*'",
        '    descriptors:',
        '      - key: user',
        '        rate_limit: { unit: minute, requests_per_unit: 5 }',
        '',
      ].join('\n'),
    );
    const keyOf = (file: string, user: string) =>
      rules.matchOne('d', [
        { key: 'files', value: file },
        { key: 'user', value: user },
      ])?.key;
    // As envoyproxy/ratelimit: the shared entry counts as its pattern, the others per value.
    expect(keyOf('reports/a.pdf', 'ada')).toBe(keyOf('reports/b.csv', 'ada'));
    expect(keyOf('reports/a.pdf', 'ada')).not.toBe(keyOf('reports/a.pdf', 'bob'));
    expect(keyOf('images/a.png', 'ada')).not.toBe(keyOf('images/b.png', 'ada'));
  });

  it('keeps unlimited, shadow_mode, quota_mode, detailed_metric and metadata', () => {
    const rules = fixture('envoy-features.yaml');
    const health = rules.matchOne('features', d(['path', '/health']))?.rule;
    expect(health).toMatchObject({ unlimited: true, policies: [], rateLimit: undefined });
    const user = rules.matchOne('features', d(['user', 'ada']))?.rule;
    expect(user).toMatchObject({
      name: 'per-user',
      shadowMode: true,
      quotaMode: true,
      detailedMetric: true,
      throttle: { mode: 'shadow' },
      metadata: { team: 'payments' },
      policies: [{ name: 'per-user', limit: 1000, window: 604_800_000, algorithm: 'fixed-window' }],
    });
  });

  it('replaces drops a replaced match of the same request, as in envoyproxy/ratelimit', () => {
    const rules = fixture('envoy-features.yaml');
    const both = rules.match('features', [d(['user', 'ada']), d(['plan', 'gold'])]);
    expect(both[0]).toBeUndefined();
    expect(both[1]?.rule.name).toBe('gold plan');
    // A name core cannot put in a header still works for `replaces`; the policy is named by unit.
    expect(both[1]?.rule.policies[0]?.name).toBe('per-month');
    expect(rules.match('features', [d(['user', 'ada'])])[0]?.rule.name).toBe('per-user');
  });

  // Regression: a replaced `unlimited` rule was dropped, and its descriptor answered as one no
  // rule matched (remaining 0 from the service) rather than unlimited.
  it('an unlimited rule is never replaced, and may replace others, as in envoyproxy/ratelimit', () => {
    const rules = parseRules(
      [
        'domain: d',
        'descriptors:',
        '  - { key: internal, rate_limit: { name: internal, unlimited: true, replaces: [{ name: per-user }] } }',
        '  - { key: user, rate_limit: { name: per-user, unit: minute, requests_per_unit: 1 } }',
        '  - { key: plan, rate_limit: { name: plan, unit: minute, requests_per_unit: 1, replaces: [{ name: internal }] } }',
      ].join('\n'),
    );
    const [internal, user, plan] = rules.match('d', [d(['internal', 'x']), d(['user', 'ada']), d(['plan', 'gold'])]);
    expect(internal?.rule.unlimited).toBe(true);
    expect(user).toBeUndefined();
    expect(plan?.rule.name).toBe('plan');
  });

  it('counter keys cannot collide across different values', () => {
    const rules = parseRules(
      'domain: k\ndescriptors:\n  - key: a\n    descriptors:\n      - key: b\n        rate_limit: { unit: second, requests_per_unit: 1 }\n',
    );
    const one = rules.matchOne('k', d(['a', 'x1:'], ['b', 'y']));
    const two = rules.matchOne('k', d(['a', 'x'], ['b', '1:y']));
    expect(one?.key).not.toBe(two?.key);
  });

  // Regression: a key written with no value was refused, where envoyproxy/ratelimit's decoder
  // leaves the field at its zero value: no descriptors, an empty value (a bare key), false.
  it('reads a key written with no value as its zero value, as envoyproxy/ratelimit does', () => {
    const rules = fixture('envoy-nulls.yaml');
    const tenant = rules.matchOne('nulls', d(['tenant', 'acme']));
    expect(tenant?.rule.rateLimit).toEqual({ unit: 'minute', requestsPerUnit: 2, windowMs: 60_000 });
    expect(tenant?.rule.shadowMode).toBe(false);
    // A bare key counts each value apart.
    expect(rules.matchOne('nulls', d(['tenant', 'other']))?.key).not.toBe(tenant?.key);
    expect(parseRules('domain: bare\ndescriptors:\n').domains).toEqual(['bare']);
  });

  it('reads the same document written as JSON', () => {
    const json = JSON.stringify({
      domain: 'messaging',
      descriptors: [{ key: 'to_number', rate_limit: { unit: 'day', requests_per_unit: 100 } }],
    });
    const rules = parseRules(json);
    expect(rules.matchOne('messaging', d(['to_number', '1']))?.rule.rateLimit?.requestsPerUnit).toBe(100);
  });

  it('the rule id depends on where a rule sits, not on its limits', () => {
    const at = (limit: number) =>
      parseRules(
        `domain: a\ndescriptors:\n  - key: ip\n    rate_limit: { unit: second, requests_per_unit: ${limit} }\n`,
      ).rules[0];
    expect(at(5)?.id).toBe(at(50)?.id);
    expect(at(5)?.id).toMatch(/^[A-Za-z0-9._:-]{1,64}$/);
  });

  // envoyproxy/ratelimit reads a file's first document only: a file ending in `---` loads there.
  it('a trailing document marker is ignored (a file ending in `---` was refused)', () => {
    const rule = '  - key: k\n    rate_limit: { unit: second, requests_per_unit: 1 }\n';
    expect(parseRules(`domain: a\ndescriptors:\n${rule}---\n`).domains).toEqual(['a']);
    expect(parseRules(`domain: a\n---\n# nothing more\n---\n`).domains).toEqual(['a']);
    // sluice's own extension, several domains in one file, still reads every document.
    expect(parseRules(`domain: a\n---\n---\ndomain: b\n---\n`).domains).toEqual(['a', 'b']);
  });

  // envoyproxy/ratelimit refuses only a unit it knows beside `unlimited`.
  it('unlimited loads with an empty unit or `unknown` (they were refused as a conflict)', () => {
    for (const unit of ['', '~', 'unknown', 'UNKNOWN', '""']) {
      const text = `domain: a\ndescriptors:\n  - key: k\n    rate_limit:\n      unlimited: true\n      unit: ${unit}\n`;
      expect(parseRules(text).matchOne('a', d(['k', 'x']))?.rule).toMatchObject({ unlimited: true, policies: [] });
    }
    expect(() =>
      parseRules('domain: a\ndescriptors:\n  - key: k\n    rate_limit: { unlimited: true, unit: Day }\n'),
    ).toThrow(expect.objectContaining({ code: 'ERR_SLUICE_RULES_CONFLICT' }));
  });

  it("a policy's nested options are frozen too, though rules share them through an alias (one rule could change another's queue)", () => {
    const rules = parseRules(
      [
        'domain: d',
        'descriptors:',
        '  - key: a',
        '    policies: [{ name: q, limit: 10, window: 1s, algorithm: gcra, queue: &q { maxDelayMs: 500 } }]',
        '    throttle: { mode: soft, overagePercent: 20 }',
        '  - key: b',
        '    policies: [{ name: q, limit: 10, window: 1s, algorithm: gcra, queue: *q }]',
        '',
      ].join('\n'),
    );
    const [a, b] = rules.rules;
    expect(Object.isFrozen(a?.policies[0]?.queue)).toBe(true);
    expect(Object.isFrozen(a?.throttle)).toBe(true);
    expect(() => {
      (a?.policies[0]?.queue as { maxDelayMs: number }).maxDelayMs = 60_000;
    }).toThrow(TypeError);
    expect(b?.policies[0]?.queue).toEqual({ maxDelayMs: 500 });
  });

  it('a rule set and its rules are frozen', () => {
    const rules = fixture('envoy-messaging.yaml');
    expect(Object.isFrozen(rules)).toBe(true);
    expect(Object.isFrozen(rules.rules)).toBe(true);
    expect(Object.isFrozen(rules.rules[0])).toBe(true);
    expect(Object.isFrozen(rules.rules[0]?.policies[0])).toBe(true);
    const withMetadata = fixture('envoy-features.yaml').rules.find((r) => r.metadata !== undefined);
    expect(withMetadata?.metadata).toEqual({ team: 'payments' });
    expect(Object.isFrozen(withMetadata?.metadata)).toBe(true);
  });
});
