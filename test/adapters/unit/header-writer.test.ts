import { createLimiter, type Decision, type HeaderTarget, type PolicyDecision } from '@sluice/core';
import { createMemoryStore } from '@sluice/memory';
import { parseRateLimit } from 'ratelimit-header-parser';
import { describe, expect, it } from 'vitest';
import { retryAfterMs } from '../../../packages/core/src/http/headers/effective-window.js';
import { checkHeaders, createHeaderWriter } from '../../../packages/core/src/http/headers/index.js';
import { parseItems } from '../helpers.js';

/** A response as a plain header map, written the way Node appends list members. */
function fakeResponse() {
  const headers: Record<string, string> = {};
  const target: HeaderTarget<Record<string, string>> = {
    setHeader: (res, name, value) => {
      res[name.toLowerCase()] = value;
    },
    appendHeader: (res, name, value) => {
      const key = name.toLowerCase();
      res[key] = res[key] === undefined ? value : `${res[key]}, ${value}`;
    },
  };
  return { headers, target };
}

const policy = (over: Partial<PolicyDecision>): PolicyDecision => ({
  name: 'p',
  limit: 10,
  windowMs: 60_000,
  remaining: 5,
  resetAfterMs: 30_000,
  retryAfterMs: 0,
  allowed: true,
  ...over,
});

const decision = (policies: PolicyDecision[], over: Partial<Decision> = {}): Decision => ({
  allowed: policies.every((p) => p.allowed),
  limit: policies[0]?.limit ?? 0,
  remaining: policies[0]?.remaining ?? 0,
  resetAfterMs: policies[0]?.resetAfterMs ?? 0,
  retryAfterMs: 0,
  delayMs: 0,
  policies,
  key: 'k',
  ...over,
});

describe('header writer', () => {
  const limiter = createLimiter({
    policies: [
      { name: 'burst', limit: 10, window: '1s', algorithm: 'token-bucket', burst: 20 },
      { name: 'daily', limit: 1000, window: '1d' },
    ],
    store: createMemoryStore(),
  });

  it('names a bucket burst that differs from the limit in a vendor parameter', () => {
    const { headers, target } = fakeResponse();
    createHeaderWriter(limiter.policies, checkHeaders(undefined), Date.now).write(
      decision([policy({ name: 'burst', remaining: 19 }), policy({ name: 'daily' })]),
      headers,
      target,
      {},
    );
    expect(parseItems(headers['ratelimit-policy'])).toEqual([
      { name: 'burst', params: { q: 10, w: 1, 'sluice-burst': 20 } },
      { name: 'daily', params: { q: 1000, w: 86_400 } },
    ]);
  });

  it('keeps the most restrictive headline when several limiters answer one request', () => {
    const { headers, target } = fakeResponse();
    const request = {};
    const options = checkHeaders({ standard: 'draft-6', legacy: true });
    const loose = createHeaderWriter(limiter.policies, options, () => 0);
    const strict = createHeaderWriter(limiter.policies, options, () => 0);
    strict.write(decision([policy({ limit: 10, remaining: 1, resetAfterMs: 4_000 })]), headers, target, request);
    loose.write(decision([policy({ limit: 100, remaining: 50 })]), headers, target, request);
    expect(parseRateLimit(headers)).toMatchObject({ limit: 10, remaining: 1 });
    expect(headers['ratelimit-reset']).toBe('4');
    expect(headers['x-ratelimit-reset']).toBe('4');
    expect(headers['ratelimit-policy']).toBe('10;w=1, 1000;w=86400, 10;w=1, 1000;w=86400');
    loose.write(decision([policy({ limit: 100, remaining: 0, resetAfterMs: 9_000 })]), headers, target, request);
    expect(headers['ratelimit-remaining']).toBe('0');
    expect(headers['ratelimit-limit']).toBe('100');
  });

  it('writes nothing for a decision the store did not make', () => {
    const { headers, target } = fakeResponse();
    const writer = createHeaderWriter(limiter.policies, checkHeaders({ legacy: true }), Date.now);
    writer.write(decision([policy({})], { reason: 'store-unavailable' }), headers, target, {});
    expect(headers).toEqual({});
  });
});

describe('Retry-After', () => {
  it('is the decision’s wait, and no earlier than any exhausted policy’s effective window', () => {
    const refused = policy({ name: 'a', allowed: false, remaining: 0, retryAfterMs: 2_000 });
    const exhausted = policy({ name: 'b', remaining: 0, resetAfterMs: 7_000 });
    const roomy = policy({ name: 'c', remaining: 9, resetAfterMs: 60_000 });
    expect(retryAfterMs(decision([refused, roomy], { retryAfterMs: 2_000 }))).toBe(2_000);
    expect(retryAfterMs(decision([refused, exhausted, roomy], { retryAfterMs: 2_000 }))).toBe(7_000);
  });

  it('is left out when the request can never pass', () => {
    const refused = policy({ allowed: false, remaining: 3, retryAfterMs: 1_000 });
    expect(retryAfterMs(decision([refused], { retryAfterMs: Number.POSITIVE_INFINITY }))).toBeUndefined();
  });
});
