import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { createServer } from 'node:net';
import { loadPackageDefinition, Server, ServerCredentials, type ServiceDefinition, status } from '@grpc/grpc-js';
import { createLimiter, type PolicyOptions, SLUICE_CHANNELS, type StoreErrorEvent } from '@sluice/core';
import { rateLimit } from '@sluice/express';
import { parseRules } from '@sluice/rules';
import { createServiceClient } from '@sluice/server';
import { afterEach, describe, expect, it } from 'vitest';
import { loadOfficialRls } from '../helpers/envoy-client.js';

const quiet = { warn() {} };
const policies: PolicyOptions[] = [{ name: 'per-ip', limit: 5, window: '1m' }];
const ended: (() => unknown)[] = [];
afterEach(async () => {
  for (const end of ended.splice(0)) await end();
});

/** A rate-limit service that fails every call with `code`. */
async function serveFailing(code: status) {
  const api = loadPackageDefinition(loadOfficialRls()) as unknown as {
    envoy: { service: { ratelimit: { v3: { RateLimitService: { service: ServiceDefinition } } } } };
  };
  const server = new Server();
  server.addService(api.envoy.service.ratelimit.v3.RateLimitService.service, {
    ShouldRateLimit: (_: unknown, callback: (error: { code: status; details: string }) => void) =>
      callback({ code, details: 'refused here' }),
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, bound) =>
      error ? reject(error) : resolve(bound),
    ),
  );
  ended.push(() => server.forceShutdown());
  return `127.0.0.1:${port}`;
}

/** A port that accepts nothing: the service is down. */
async function closedPort(): Promise<string> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return `127.0.0.1:${port}`;
}

/** The store-error event and the rejection of one decision under `'throw'`. */
async function failureOf(address: string) {
  const client = createServiceClient({ address, domain: 'api', logger: quiet, maxReconnectBackoffMs: 100 });
  ended.push(() => client.close());
  const limiter = createLimiter({
    policies,
    store: client,
    logger: quiet,
    storeTimeoutMs: 10_000,
    onStoreError: 'throw',
  });
  const events: StoreErrorEvent[] = [];
  const listener = (event: unknown) => events.push(event as StoreErrorEvent);
  subscribe(SLUICE_CHANNELS.storeError, listener);
  try {
    const error = await limiter.consume('client').catch((e: Error & { cause?: Error & { code?: unknown } }) => e);
    return { error: error as Error & { cause?: Error & { code?: unknown } }, errorType: events[0]?.errorType };
  } finally {
    unsubscribe(SLUICE_CHANNELS.storeError, listener);
  }
}

describe("a failed call names its gRPC status (every one read error.type 'Error')", () => {
  it.each([
    ['INVALID_ARGUMENT', status.INVALID_ARGUMENT],
    ['RESOURCE_EXHAUSTED', status.RESOURCE_EXHAUSTED],
    ['UNAVAILABLE', status.UNAVAILABLE],
  ])('a service answering %s', async (name, code) => {
    const { error, errorType } = await failureOf(await serveFailing(code));
    expect(errorType).toBe(name);
    expect(error).toMatchObject({ code: 'ERR_SLUICE_STORE_UNAVAILABLE', cause: { code: name } });
    expect(error.cause?.message).toContain(`answered ${name}: refused here`);
  });

  it('a service that is down', async () => {
    const { errorType } = await failureOf(await closedPort());
    expect(errorType).toBe('UNAVAILABLE');
  });
});

// One descriptor a policy, and the service takes 64 a call: a limiter of 65 policies had every
// call refused, and under the default fail policy let every request through.
it('a limiter of more policies than the service takes descriptors fails at creation', () => {
  const store = createServiceClient({ address: '127.0.0.1:1', domain: 'api', logger: quiet });
  ended.push(() => store.close());
  const many: PolicyOptions[] = Array.from({ length: 65 }, (_, i) => ({ name: `p${i}`, limit: 10, window: '1m' }));
  expect(() => createLimiter({ store, policies: many })).toThrow(
    expect.objectContaining({ code: 'ERR_SLUICE_CONFLICTING_OPTIONS', message: expect.stringContaining('at most 64') }),
  );
  expect(() => createLimiter({ store, policies: many.slice(0, 64) })).not.toThrow();
});

describe('options that give a charge back', () => {
  it.each(['skipSuccessfulRequests', 'skipFailedRequests'])(
    '%s fails at creation on the client, which cannot refund (every request counted, without a word)',
    async (option) => {
      const store = createServiceClient({ address: '127.0.0.1:1', domain: 'api', logger: quiet });
      ended.push(() => store.close());
      expect(() => rateLimit({ store, policies, [option]: true })).toThrow(
        expect.objectContaining({
          code: 'ERR_SLUICE_CONFLICTING_OPTIONS',
          message: expect.stringContaining(`\`${option}\` gives a charge back after the response`),
        }),
      );
    },
  );

  // The ban counts under policies of its own ('refusals', 'ban'), which the service asked its
  // rules about by name: none limits them, so no client was ever banned, and only two warnings
  // naming policies the user never wrote told of it.
  it("ban fails at creation on the client, which asks its rules about the ban's own policies", async () => {
    const store = createServiceClient({ address: '127.0.0.1:1', domain: 'api', logger: quiet });
    ended.push(() => store.close());
    expect(() => rateLimit({ store, policies, ban: { after: 0, duration: '1h' } })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_CONFLICTING_OPTIONS', message: expect.stringContaining('`ban`') }),
    );
    // The namespace it claimed is given back: made again without the ban, it is created.
    expect(() => rateLimit({ store, policies })).not.toThrow();
  });

  // Where one rule refused, the others' charges were given back by a refund the client
  // rejects, swallowed: every refused /login spent the per-address quota too.
  it("rules mode fails at creation on the client, which cannot give back the other rules' charges", async () => {
    const store = createServiceClient({ address: '127.0.0.1:1', domain: 'api', logger: quiet });
    ended.push(() => store.close());
    const rules = parseRules(
      'domain: api\ndescriptors:\n  - key: remote_address\n    rate_limit: { unit: hour, requests_per_unit: 3 }\n',
    );
    expect(() => rateLimit({ store, rules })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_CONFLICTING_OPTIONS', message: expect.stringContaining('`rules`') }),
    );
  });
});
