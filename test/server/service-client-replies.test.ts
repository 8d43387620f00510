import { createLimiter, type LimiterOptions, type Logger } from '@sluice/core';
import { createServiceClient } from '@sluice/server';
import { afterEach, describe, expect, it } from 'vitest';
import { type OfficialResponse, serveFixedRls } from '../helpers/envoy-client.js';

const quiet = { warn() {} };
const ended: (() => void)[] = [];
afterEach(() => {
  for (const end of ended.splice(0)) end();
});

const perIp = { name: 'per-ip', limit: 5, window: '1m' } as const;
const perUser = { name: 'per-user', limit: 5, window: '1m' } as const;

/** A limiter (failing with 'throw') on the Node client of a service that always answers `response`. */
async function limiterAnswered(
  response: OfficialResponse,
  options: Partial<LimiterOptions> = {},
  clientLogger: Logger = quiet,
) {
  const service = await serveFixedRls(() => response);
  const client = createServiceClient({ address: service.address, domain: 'api', logger: clientLogger });
  ended.push(() => void client.close(), service.close);
  return createLimiter({
    policies: [perIp],
    store: client,
    logger: quiet,
    onStoreError: 'throw',
    // The first call opens the connection, which on a loaded machine outlasts the default 100 ms.
    storeTimeoutMs: 10_000,
    ...options,
  } as LimiterOptions);
}

const ok = {
  code: 'OK',
  current_limit: { requests_per_unit: 5, unit: 'MINUTE' },
  limit_remaining: 4,
  duration_until_reset: { seconds: 42 },
};

// `rls.proto` promises one status per descriptor. A reply short of one was read as "no rule for
// this policy" and passed, with a warning blaming the rules; one too many went unnoticed.
describe('a reply without one status per descriptor', () => {
  it.each([
    ['no status at all', []],
    ['one status for two descriptors', [ok]],
    ['three statuses for two descriptors', [ok, ok, ok]],
  ])('%s is a bad reply under the fail policy, not a pass', async (_, statuses) => {
    const warnings: string[] = [];
    const limiter = await limiterAnswered(
      { overall_code: 'OK', statuses },
      { policies: [perIp, perUser] },
      { warn: (m) => warnings.push(m) },
    );
    await expect(limiter.consume('10.0.0.1')).rejects.toMatchObject({
      code: 'ERR_SLUICE_STORE_UNAVAILABLE',
      cause: { code: 'ERR_SLUICE_BAD_STORE_REPLY', message: expect.stringContaining('for 2 descriptors') },
    });
    expect(warnings.join()).not.toContain('WRN_SLUICE_NO_RULE');
  });
});

describe('a refusal the client reads as one', () => {
  // A descriptor refused without `current_limit` was taken for a policy with no rule: warned
  // about as unlimited, and, the request refused anyway, told to retry at once.
  it('a status OVER_LIMIT without current_limit refuses until its reset, with no "no rule" warning', async () => {
    const warnings: string[] = [];
    const refused = { code: 'OVER_LIMIT', duration_until_reset: { seconds: 5 } };
    const limiter = await limiterAnswered(
      { overall_code: 'OVER_LIMIT', statuses: [refused] },
      {},
      {
        warn: (m) => warnings.push(m),
      },
    );
    const decision = await limiter.consume('10.0.0.1');
    expect(decision).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 5000 });
    expect(warnings).toEqual([]);
  });

  // Retry-After: 0 on a 429 tells every client to come straight back.
  it('a refusal with no duration_until_reset and no sluice figures waits the policy window, not 0', async () => {
    const { duration_until_reset: _, ...noDuration } = { ...ok, code: 'OVER_LIMIT', limit_remaining: 0 };
    const limiter = await limiterAnswered({ overall_code: 'OVER_LIMIT', statuses: [noDuration] });
    const decision = await limiter.consume('10.0.0.1');
    expect(decision).toMatchObject({ allowed: false, retryAfterMs: 60_000 });
  });

  it('an overall refusal naming no descriptor over its limit, with no reset, waits the window too', async () => {
    const { duration_until_reset: _, ...noDuration } = ok;
    const limiter = await limiterAnswered({ overall_code: 'OVER_LIMIT', statuses: [noDuration] });
    expect(await limiter.consume('10.0.0.1')).toMatchObject({ allowed: false, retryAfterMs: 60_000 });
  });
});

// A warning is logged from the gRPC callback: a logger that threw escaped grpc-js as an
// uncaught exception (which ends a Node process) and the decision never settled.
it('a logger that throws fails that decision under the fail policy, and nothing escapes', async () => {
  const mismatch = { ...ok, current_limit: { requests_per_unit: 7, unit: 'MINUTE' } };
  const broken = {
    warn() {
      throw new Error('logger broke');
    },
  };
  const limiter = await limiterAnswered({ overall_code: 'OK', statuses: [mismatch] }, {}, broken);
  await expect(limiter.consume('10.0.0.1')).rejects.toMatchObject({
    code: 'ERR_SLUICE_STORE_UNAVAILABLE',
    cause: { message: 'logger broke' },
  });
  // Warned once: the next decision reads the same reply without calling the logger.
  expect(await limiter.consume('10.0.0.1')).toMatchObject({ allowed: true, remaining: 4 });
});

// Only the limit was compared: a service counting 5 an hour behind a local 5 a minute went
// unwarned, its reset of 50 minutes shown beside the local window of 60 s.
describe('a service whose rule differs from the local policy', () => {
  it.each([
    ['its limit', { requests_per_unit: 100, unit: 'MINUTE' }, 'but 100 per MINUTE'],
    ['its window', { requests_per_unit: 5, unit: 'HOUR' }, 'but 5 per HOUR'],
    ['a shorter window', { requests_per_unit: 5, unit: 'SECOND' }, 'but 5 per SECOND'],
    ['its limit, of a window of no whole unit', { requests_per_unit: 7, unit: 'UNKNOWN' }, 'but a limit of 7'],
  ])('in %s is warned about once, naming both', async (_, currentLimit, named) => {
    const warnings: string[] = [];
    const response = { overall_code: 'OK', statuses: [{ ...ok, current_limit: currentLimit }] };
    const limiter = await limiterAnswered(response, {}, { warn: (m) => warnings.push(m) });
    await limiter.consume('10.0.0.1');
    await limiter.consume('10.0.0.1');
    expect(warnings).toEqual([
      expect.stringContaining(`WRN_SLUICE_RULE_MISMATCH: policy "per-ip" is 5 per 1m here ${named}`),
    ]);
  });

  it('is not warned about where they agree, or where the service names no whole unit', async () => {
    const warnings: string[] = [];
    // An enum number past the proto's list reaches the client as a number: it failed every call.
    for (const unit of ['MINUTE', 'UNKNOWN', 8 as unknown as string]) {
      const response = { overall_code: 'OK', statuses: [{ ...ok, current_limit: { requests_per_unit: 5, unit } }] };
      const limiter = await limiterAnswered(response, {}, { warn: (m) => warnings.push(m) });
      await limiter.consume('10.0.0.1');
    }
    expect(warnings).toEqual([]);
  });
});
