import { type Client, credentials, loadPackageDefinition, type ServiceError, status } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { PROTO_DIR } from '@sluice/server';
import { parseList } from 'structured-headers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnvoyClient, createHealthClient, type OfficialRequest } from '../helpers/envoy-client.js';
import { type ServingSluice, startSluice } from '../helpers/sluice-process.js';

const rules = new URL('./fixtures/edge.yaml', import.meta.url).pathname;
let sluice: ServingSluice;
let envoy: ReturnType<typeof createEnvoyClient>;
let run = 0;
/** A value no other test uses, so each test starts from fresh counters. */
const fresh = (label: string) => `${label}-${++run}-${process.pid}`;

const ask = (descriptors: NonNullable<OfficialRequest['descriptors']>, extra: Partial<OfficialRequest> = {}) =>
  envoy.shouldRateLimit({ domain: 'edge', descriptors, ...extra });
const one = (key: string, value: string) => [{ entries: [{ key, value }] }];
const sluiceMetadata = (response: { dynamic_metadata?: { fields?: Record<string, unknown> } }) =>
  JSON.stringify(response.dynamic_metadata?.fields?.sluice);

beforeAll(async () => {
  sluice = await startSluice(['--rules', rules, '--headers', 'draft-11']);
  envoy = createEnvoyClient(sluice.grpcAddress);
});
afterAll(async () => {
  envoy?.close();
  await sluice?.kill();
});

describe('sluice serve over gRPC, called with the official Envoy protos', () => {
  it('counts per descriptor value and reports the limit, what remains and the reset', async () => {
    const ip = fresh('203.0.113');
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push(await ask(one('remote_address', ip)));
    expect(answers.map((a) => a.overall_code)).toEqual(['OK', 'OK', 'OK', 'OVER_LIMIT']);
    expect(answers.map((a) => a.statuses?.[0]?.limit_remaining ?? 0)).toEqual([2, 1, 0, 0]);
    expect(answers[0]?.statuses?.[0]?.current_limit).toEqual({ requests_per_unit: 3, unit: 'HOUR', name: 'per-ip' });
    const reset = answers[3]?.statuses?.[0]?.duration_until_reset?.seconds ?? 0;
    expect(reset).toBeGreaterThan(0);
    expect(reset).toBeLessThanOrEqual(3600);
    // Another client has its own counter.
    expect((await ask(one('remote_address', fresh('198.51.100')))).overall_code).toBe('OK');
  });

  it('charges hits_addend as the cost, and refuses a cost beyond what remains without spending it', async () => {
    const ip = fresh('cost');
    const first = await ask(one('remote_address', ip), { hits_addend: 2 });
    expect(first.statuses?.[0]?.limit_remaining).toBe(1);
    const tooMuch = await ask(one('remote_address', ip), { hits_addend: 2 });
    expect(tooMuch.overall_code).toBe('OVER_LIMIT');
    const last = await ask(one('remote_address', ip));
    expect(last.overall_code).toBe('OK');
    expect(last.statuses?.[0]?.limit_remaining ?? 0).toBe(0);
  });

  it('honours a descriptor limit override, in the counter of the same rule', async () => {
    const ip = fresh('override');
    const override = { requests_per_unit: 1, unit: 'HOUR' };
    const first = await ask([{ entries: [{ key: 'remote_address', value: ip }], limit: override }]);
    expect(first.overall_code).toBe('OK');
    expect(first.statuses?.[0]?.current_limit).toMatchObject({ requests_per_unit: 1, unit: 'HOUR' });
    expect((await ask([{ entries: [{ key: 'remote_address', value: ip }], limit: override }])).overall_code).toBe(
      'OVER_LIMIT',
    );
    // Without the override the rule's own limit of 3 applies to the same count.
    expect((await ask(one('remote_address', ip))).statuses?.[0]?.limit_remaining).toBe(1);
  });

  it('decides all descriptors at once: a refusal by one spends nothing on the others', async () => {
    const path = { entries: [{ key: 'path', value: '/login' }] };
    // The /login rule counts for everybody: use it up first.
    const loginState = await ask([path]);
    if (loginState.overall_code === 'OK') await ask([path]);
    const ip = fresh('all-or-nothing');
    const refused = await ask([{ entries: [{ key: 'remote_address', value: ip }] }, path]);
    expect(refused.overall_code).toBe('OVER_LIMIT');
    expect(refused.statuses?.map((s) => s.code)).toEqual(['OK', 'OVER_LIMIT']);
    // Reported as if never charged, and indeed not charged.
    expect(refused.statuses?.[0]?.limit_remaining).toBe(3);
    expect((await ask(one('remote_address', ip))).statuses?.[0]?.limit_remaining).toBe(2);
  });

  it('leaves dynamic_metadata out of a plain pass, and carries the exact wait on a refusal', async () => {
    const ip = fresh('metadata');
    const first = await ask(one('remote_address', ip));
    expect(first.overall_code).toBe('OK');
    expect(first.dynamic_metadata).toBeUndefined();
    await ask(one('remote_address', ip), { hits_addend: 2 });
    const refused = await ask(one('remote_address', ip));
    expect(refused.overall_code).toBe('OVER_LIMIT');
    expect(sluiceMetadata(refused)).toMatch(/"retryAfterMs":\{"numberValue":[1-9]/);
  });

  it('answers OK in shadow mode over the limit, and says so in the metadata', async () => {
    const value = fresh('shadow');
    expect((await ask(one('shadowed', value))).overall_code).toBe('OK');
    const over = await ask(one('shadowed', value));
    expect(over.overall_code).toBe('OK');
    expect(over.statuses?.[0]?.code).toBe('OK');
    expect(sluiceMetadata(over)).toContain('shadow');
  });

  it('answers OK without a limit for unmatched and unlimited descriptors, and for an unknown domain', async () => {
    const answer = await ask([
      { entries: [{ key: 'nothing', value: 'x' }] },
      { entries: [{ key: 'free', value: 'y' }] },
    ]);
    expect(answer.overall_code).toBe('OK');
    expect(answer.statuses).toHaveLength(2);
    for (const s of answer.statuses ?? []) expect(s.current_limit).toBeUndefined();
    expect((await envoy.shouldRateLimit({ domain: 'elsewhere', descriptors: one('a', 'b') })).overall_code).toBe('OK');
  });

  it('refuses every call to a blocked rule (requests_per_unit: 0), with nothing counted', async () => {
    const answer = await ask(one('blocked', fresh('blocked')));
    expect(answer.overall_code).toBe('OVER_LIMIT');
    expect(answer.statuses?.[0]?.current_limit?.requests_per_unit ?? 0).toBe(0);
    expect(answer.statuses?.[0]?.duration_until_reset?.seconds ?? 0).toBeLessThanOrEqual(60);
    // No wait lifts it: -1, as for a cost that can never pass (it said to come back at the reset).
    expect(sluiceMetadata(answer)).toMatch(/"retryAfterMs":\{"numberValue":-1,/);
  });

  it.each(['token-bucket', 'leaky-bucket', 'gcra', 'fixed-window', 'sliding-window-log', 'sliding-window-counter'])(
    'limits with %s',
    async (algorithm) => {
      const codes = [];
      for (let i = 0; i < 3; i++) codes.push((await ask(one('algorithm', algorithm))).overall_code);
      expect(codes).toEqual(['OK', 'OK', 'OVER_LIMIT']);
    },
  );

  it('lets soft throttling pass the overage, marked, and several policies decide together', async () => {
    const value = fresh('soft');
    const soft = [];
    for (let i = 0; i < 4; i++) soft.push(await ask(one('soft', value)));
    expect(soft.map((a) => a.overall_code)).toEqual(['OK', 'OK', 'OK', 'OVER_LIMIT']);
    expect(sluiceMetadata(soft[2] as object)).toContain('soft');
    const both = fresh('two');
    const codes = [];
    for (let i = 0; i < 3; i++) codes.push((await ask(one('two-policies', both))).overall_code);
    expect(codes).toEqual(['OK', 'OK', 'OVER_LIMIT']);
  });

  it('adds the IETF RateLimit fields to response_headers_to_add, with Retry-After when refused', async () => {
    const ip = fresh('headers');
    const ok = await ask(one('remote_address', ip));
    const fields = new Map(ok.response_headers_to_add?.map((h) => [h.key.toLowerCase(), h.value]));
    expect(parseList(fields.get('ratelimit-policy') ?? '')).toHaveLength(1);
    const [item] = parseList(fields.get('ratelimit') ?? '') as [unknown, Map<string, unknown>][];
    expect(String(item?.[0])).toBe('per-ip');
    expect(item?.[1].get('r')).toBe(2);
    await ask(one('remote_address', ip), { hits_addend: 2 });
    const refused = await ask(one('remote_address', ip));
    const retry = refused.response_headers_to_add?.find((h) => h.key === 'Retry-After')?.value;
    expect(Number(retry)).toBeGreaterThan(0);
  });
});

describe('bad requests get INVALID_ARGUMENT and count nothing', () => {
  const code = (promise: Promise<unknown>) =>
    promise.then(
      () => 'answered',
      (error: ServiceError) => error.code,
    );

  it.each([
    ['no domain', { descriptors: one('remote_address', 'x') }],
    ['no descriptors', { domain: 'edge', descriptors: [] }],
    ['a descriptor without entries', { domain: 'edge', descriptors: [{ entries: [] }] }],
    ['65 descriptors', { domain: 'edge', descriptors: Array.from({ length: 65 }, () => one('free', 'x')[0]) }],
    [
      '17 entries',
      { domain: 'edge', descriptors: [{ entries: Array.from({ length: 17 }, () => ({ key: 'k', value: 'v' })) }] },
    ],
    ['an oversized domain', { domain: 'd'.repeat(257), descriptors: one('free', 'x') }],
    ['an oversized key', { domain: 'edge', descriptors: one('k'.repeat(257), 'x') }],
    [
      'an override of unknown unit',
      { domain: 'edge', descriptors: [{ ...one('free', 'x')[0], limit: { requests_per_unit: 5, unit: 'UNKNOWN' } }] },
    ],
  ])('%s', async (_, request) => {
    expect(await code(envoy.shouldRateLimit(request as OfficialRequest))).toBe(status.INVALID_ARGUMENT);
  });

  it('half a million descriptors, with nothing counted for the valid ones among them', async () => {
    const ip = fresh('many');
    // Empty descriptors keep the message under the service's bound of 1 MiB, so it reaches the checks.
    const descriptors = [...one('remote_address', ip), ...Array.from({ length: 499_999 }, () => ({}))];
    expect(await code(ask(descriptors))).toBe(status.INVALID_ARGUMENT);
    expect((await ask(one('remote_address', ip))).statuses?.[0]?.limit_remaining).toBe(2);
  });

  it('an entry too long after valid descriptors, with nothing counted', async () => {
    const ip = fresh('partial');
    const request = [...one('remote_address', ip), ...one('k'.repeat(257), 'y')];
    expect(await code(ask(request))).toBe(status.INVALID_ARGUMENT);
    expect((await ask(one('remote_address', ip))).statuses?.[0]?.limit_remaining).toBe(2);
  });
});

describe('a descriptor-level hits_addend (newer rls.proto than @grpc/grpc-js-xds ships)', () => {
  it('of 0 looks without counting', async () => {
    const definition = loadSync('envoy/service/ratelimit/v3/rls.proto', {
      keepCase: true,
      enums: String,
      longs: Number,
      includeDirs: [PROTO_DIR],
    });
    const api = loadPackageDefinition(definition) as unknown as {
      envoy: { service: { ratelimit: { v3: { RateLimitService: new (a: string, c: unknown) => Client } } } };
    };
    const client = new api.envoy.service.ratelimit.v3.RateLimitService(
      sluice.grpcAddress,
      credentials.createInsecure(),
    );
    const call = (request: object) =>
      new Promise<{ overall_code: string; statuses: { limit_remaining?: number }[] }>((resolve, reject) =>
        (
          client as unknown as Record<string, (r: object, cb: (e: Error | null, v: never) => void) => void>
        ).ShouldRateLimit?.(request, (error, value) => (error ? reject(error) : resolve(value))),
      );
    const ip = fresh('look');
    const look = {
      domain: 'edge',
      descriptors: [{ entries: [{ key: 'remote_address', value: ip }], hits_addend: { value: 0 } }],
    };
    for (let i = 0; i < 3; i++) expect((await call(look)).statuses[0]?.limit_remaining).toBe(3);
    await ask(one('remote_address', ip), { hits_addend: 3 });
    expect((await call(look)).overall_code).toBe('OVER_LIMIT');
    client.close();
  });
});

describe('grpc.health.v1', () => {
  it('reports SERVING for the server and for the rate-limit service', async () => {
    const health = createHealthClient(sluice.grpcAddress);
    expect(await health.check('')).toBe('SERVING');
    expect(await health.check('envoy.service.ratelimit.v3.RateLimitService')).toBe('SERVING');
    health.close();
  });
});
