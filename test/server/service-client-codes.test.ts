import { createLimiter, type LimiterOptions, type PolicyOptions } from '@sluice/core';
import { createServiceClient, type ServiceClient } from '@sluice/server';
import { afterEach, describe, expect, it } from 'vitest';
import { type OfficialResponse, serveFixedRls } from '../helpers/envoy-client.js';

const quiet = { warn() {} };
const ended: (() => void)[] = [];
afterEach(() => {
  for (const end of ended.splice(0)) end();
});

/** A limiter on the Node client of a service that always answers `response`. */
async function limiterAnswered(response: OfficialResponse, options: Partial<LimiterOptions> = {}) {
  const service = await serveFixedRls(() => response);
  const client: ServiceClient = createServiceClient({ address: service.address, domain: 'api', logger: quiet });
  ended.push(() => client.close(), service.close);
  return createLimiter({
    policies: [{ name: 'per-ip', limit: 5, window: '1m' }],
    store: client,
    logger: quiet,
    // The first call opens the connection, which on a loaded machine outlasts the default 100 ms.
    storeTimeoutMs: 10_000,
    ...options,
  } as LimiterOptions);
}

/** `limiterAnswered` with the client's warnings kept, over `policies`. */
async function warnedLimiterAnswered(response: OfficialResponse, policies: readonly PolicyOptions[]) {
  const warnings: string[] = [];
  const service = await serveFixedRls(() => response);
  const client = createServiceClient({
    address: service.address,
    domain: 'api',
    logger: { warn: (message) => warnings.push(message) },
  });
  ended.push(() => client.close(), service.close);
  const limiter = createLimiter({ policies, store: client, logger: quiet, storeTimeoutMs: 10_000 });
  return { limiter, warnings };
}

const status = (code: string, remaining: number) => ({
  code,
  current_limit: { requests_per_unit: 5, unit: 'MINUTE', name: 'per-ip' },
  limit_remaining: remaining,
  duration_until_reset: { seconds: 42 },
});
const second = { name: 'per-user', limit: 5, window: '1m' } as const;

/** `dynamic_metadata` as sluice's service sends it, for one status. */
const sluiceMarks = (figures: { retryAfterMs: number; delayMs: number; overLimit: string }) => ({
  fields: {
    sluice: {
      structValue: {
        fields: {
          statuses: {
            listValue: {
              values: [
                {
                  structValue: {
                    fields: {
                      retryAfterMs: { numberValue: figures.retryAfterMs },
                      delayMs: { numberValue: figures.delayMs },
                      overLimit: { stringValue: figures.overLimit },
                    },
                  },
                },
              ],
            },
          },
        },
      },
    },
  },
});

// Envoy refuses a request exactly when `overall_code` is OVER_LIMIT. A one-policy limiter read
// only its descriptor's status, so a service in shadow mode, which reports the descriptor over
// its limit and lets the request through, had the client refuse what Envoy passes.
describe('the Node client follows overall_code, as Envoy does', () => {
  // envoyproxy/ratelimit's SHADOW_MODE answers as a `quota_mode` pass does: nothing tells them apart.
  it('a descriptor over its limit in an OK response passes, unmarked, showing no quota left', async () => {
    const limiter = await limiterAnswered({ overall_code: 'OK', statuses: [status('OVER_LIMIT', 0)] });
    const decision = await limiter.consume('10.0.0.1');
    expect(decision).toMatchObject({ allowed: true, remaining: 0, retryAfterMs: 0 });
    expect(decision.overLimit).toBeUndefined();
    expect(decision.policies[0]).toMatchObject({ allowed: true, remaining: 0, resetAfterMs: 42_000 });
  });

  it('the same with two policies: the request passes, the one over its limit shown spent', async () => {
    const perUser = { ...status('OVER_LIMIT', 0), current_limit: { requests_per_unit: 5, unit: 'MINUTE' } };
    const limiter = await limiterAnswered(
      { overall_code: 'OK', statuses: [status('OK', 3), perUser] },
      { policies: [{ name: 'per-ip', limit: 5, window: '1m' }, second] },
    );
    const decision = await limiter.consume('10.0.0.1');
    expect(decision).toMatchObject({ allowed: true, retryAfterMs: 0 });
    expect(decision.policies[1]).toMatchObject({ name: 'per-user', allowed: true, remaining: 0 });
  });

  // sluice's service marks what its shadow mode let through: the pass reads as local shadow mode's.
  it("a status sluice's metadata marks shadow passes marked, as a limiter's own shadow mode passes it", async () => {
    const shadowMarked = {
      overall_code: 'OK',
      statuses: [status('OVER_LIMIT', 0)],
      dynamic_metadata: sluiceMarks({ retryAfterMs: 42_000, delayMs: 0, overLimit: 'shadow' }),
    };
    const limiter = await limiterAnswered(shadowMarked);
    const decision = await limiter.consume('10.0.0.1');
    expect(decision).toMatchObject({ allowed: true, remaining: 0, retryAfterMs: 0, overLimit: 'shadow' });
    expect(decision.policies[0]).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 42_000 });
    const shadowed = await limiterAnswered(shadowMarked, { throttle: { mode: 'shadow' } });
    expect(await shadowed.consume('10.0.0.1')).toEqual(decision);
    expect(await limiter.peek('10.0.0.1')).toMatchObject({ allowed: true, remaining: 0, overLimit: 'shadow' });
  });

  it('a mark the client does not know is left out, warned of once; the decision stands', async () => {
    const { limiter, warnings } = await warnedLimiterAnswered(
      {
        overall_code: 'OK',
        statuses: [status('OK', 2)],
        dynamic_metadata: sluiceMarks({ retryAfterMs: 0, delayMs: 0, overLimit: 'lenient' }),
      },
      [{ name: 'per-ip', limit: 5, window: '1m' }],
    );
    for (let i = 0; i < 2; i++) {
      const decision = await limiter.consume('10.0.0.1');
      expect(decision).toMatchObject({ allowed: true, remaining: 2 });
      expect(decision.overLimit).toBeUndefined();
    }
    expect(warnings).toEqual([expect.stringContaining('WRN_SLUICE_UNKNOWN_MARK')]);
    expect(warnings[0]).toContain('"lenient"');
  });

  it('a refusal that names no descriptor over its limit refuses every policy until its reset', async () => {
    const limiter = await limiterAnswered({ overall_code: 'OVER_LIMIT', statuses: [status('OK', 2)] });
    const decision = await limiter.consume('10.0.0.1');
    expect(decision).toMatchObject({ allowed: false, retryAfterMs: 42_000 });
    expect(decision.policies[0]).toMatchObject({ allowed: false });
  });

  // Refused as a whole, a policy the service had no rule for was warned of as "not limited
  // there" just before the 429 it was part of. A policy without a rule beside one the service
  // refused is still warned of: it is not limited there.
  it.each([
    ['names no descriptor', [{ code: 'OK' }], []],
    ['names another descriptor', [{ code: 'OK' }, status('OVER_LIMIT', 0)], ['WRN_SLUICE_NO_RULE']],
  ] as const)(
    'a refusal that %s warns of a policy without a rule only where it is unlimited',
    async (_, statuses, codes) => {
      const { limiter, warnings } = await warnedLimiterAnswered(
        { overall_code: 'OVER_LIMIT', statuses: [...statuses] },
        [{ name: 'per-ip', limit: 5, window: '1m' } as const, second].slice(0, statuses.length),
      );
      expect(await limiter.consume('10.0.0.1')).toMatchObject({ allowed: false });
      expect(warnings.map((w) => w.match(/WRN_\w+/)?.[0])).toEqual(codes);
    },
  );

  it('a response without a decision (overall_code UNKNOWN) is a failure under the fail policy', async () => {
    const thrown = await limiterAnswered(
      { overall_code: 'UNKNOWN', statuses: [status('OK', 2)] },
      {
        onStoreError: 'throw',
      },
    );
    await expect(thrown.consume('10.0.0.1')).rejects.toMatchObject({
      code: 'ERR_SLUICE_STORE_UNAVAILABLE',
      cause: { code: 'ERR_SLUICE_BAD_STORE_REPLY', message: expect.stringContaining('overall_code UNKNOWN') },
    });
    const denied = await limiterAnswered({ statuses: [status('OK', 2)] }, { onStoreError: 'deny' });
    expect(await denied.consume('10.0.0.1')).toMatchObject({ allowed: false, reason: 'store-unavailable' });
  });

  it('agreeing codes are read as before: OK passes with its remaining, OVER_LIMIT refuses', async () => {
    const passing = await limiterAnswered({ overall_code: 'OK', statuses: [status('OK', 3)] });
    expect(await passing.consume('10.0.0.1')).toMatchObject({ allowed: true, remaining: 3 });
    const refusing = await limiterAnswered({ overall_code: 'OVER_LIMIT', statuses: [status('OVER_LIMIT', 0)] });
    expect(await refusing.consume('10.0.0.1')).toMatchObject({ allowed: false, retryAfterMs: 42_000 });
  });
});
