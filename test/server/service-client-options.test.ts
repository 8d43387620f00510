import { createLimiter, type PolicyOptions } from '@sluice/core';
import { parseRules } from '@sluice/rules';
import { createDecisionServer, createServiceClient, credentials, ServerCredentials } from '@sluice/server';
import { expect, it } from 'vitest';

const good = { address: '127.0.0.1:8081', domain: 'api' };

// Each was taken without a word and failed at every decision instead (or, for `deadline`, was
// ignored): a gRPC target with a URL scheme fails name resolution, a domain over 256 characters
// is refused by the service, a logger without `warn` threw out of the gRPC callback.
it.each([
  [{ ...good, deadline: 50 }, 'ERR_SLUICE_UNKNOWN_OPTION', '`deadlineMs`'],
  [{ ...good, address: 'http://127.0.0.1:8081' }, 'ERR_SLUICE_INVALID_SERVER_OPTION', '`address`'],
  [{ ...good, domain: 'd'.repeat(257) }, 'ERR_SLUICE_INVALID_SERVER_OPTION', '`domain`'],
  // Regression: the service refused it as no UTF-8 in every call, after `ready()` had resolved.
  [{ ...good, domain: 'api\ud800' }, 'ERR_SLUICE_INVALID_SERVER_OPTION', 'no lone surrogate'],
  [{ ...good, credentials: {} }, 'ERR_SLUICE_INVALID_SERVER_OPTION', '`credentials`'],
  // A loader that found no certificate: it connected in plaintext.
  [{ ...good, credentials: null }, 'ERR_SLUICE_INVALID_SERVER_OPTION', '`credentials`'],
  [{ ...good, logger: {} }, 'ERR_SLUICE_INVALID_LOGGER', '`logger`'],
  [{ ...good, deadlineMs: 2 ** 31 }, 'ERR_SLUICE_INVALID_SERVER_OPTION', '`deadlineMs`'],
  [{ ...good, maxReconnectBackoffMs: 0 }, 'ERR_SLUICE_INVALID_SERVER_OPTION', '`maxReconnectBackoffMs`'],
  [null, 'ERR_SLUICE_INVALID_SERVER_OPTION', '`options`'],
])('createServiceClient refuses %o at creation', (options, code, mention) => {
  expect(() => createServiceClient(options as never)).toThrow(expect.objectContaining({ code }));
  expect(() => createServiceClient(options as never)).toThrow(mention);
});

/** Credentials as another copy of @grpc/grpc-js makes them: its own classes, of the same names. */
class ChannelCredentials {}
class SecureChannelCredentialsImpl extends ChannelCredentials {}
class ServerCredentialsOfAnotherCopy {}
Object.defineProperty(ServerCredentialsOfAnotherCopy, 'name', { value: 'ServerCredentials' });

// An app whose @grpc/grpc-js is not @sluice/server's made credentials grpc-js refuses by class:
// the error said "received object", and no credentials would do.
it('names credentials from another copy of @grpc/grpc-js as such, and exports its own', async () => {
  expect(() => createServiceClient({ ...good, credentials: new SecureChannelCredentialsImpl() as never })).toThrow(
    'another copy of it: make them with the `credentials` and `ServerCredentials` @sluice/server exports',
  );
  const rules = parseRules(
    'domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: minute, requests_per_unit: 1 }\n',
  );
  expect(() => createDecisionServer({ rules, grpcCredentials: new ServerCredentialsOfAnotherCopy() as never })).toThrow(
    'another copy of it',
  );
  createServiceClient({ ...good, credentials: credentials.createInsecure(), logger: { warn() {} } }).close();
  await createDecisionServer({
    rules,
    grpcCredentials: ServerCredentials.createInsecure(),
    log: { line() {}, warn() {} },
  }).close();
});

// Regressions: each was taken, and every call then failed on name resolution.
it.each([
  'grpc://127.0.0.1:8081',
  '127.0.0.1:8081 ',
  '[::1',
  '127.0.0.1:99999',
  '127.0.0.1:0',
  '127.0.0.1:abc',
  'unix:',
  'dns:',
  'dns:///',
  'foo:///x',
  'ipv4:1.2.3.4:8081,',
  // grpc-js resolves no name after ipv4: or ipv6:, nor an address of the other family, and
  // brackets hold an IPv6 address only.
  'ipv4:localhost:8081',
  'ipv4:[::1]:8081',
  'ipv6:127.0.0.1:8081',
  '[1.2.3.4]:8081',
  '[:::::]:8081',
  // Bare after ipv6:, this is the address ::1:8081 on port 443 to grpc-js.
  'ipv6:::1:8081',
  // A zone id Node's address check refuses, which grpc-js cannot parse either.
  '[fe80::1%eth_0]:8081',
])('createServiceClient refuses the address %j at creation', (address) => {
  expect(() => createServiceClient({ ...good, address })).toThrow(
    expect.objectContaining({
      code: 'ERR_SLUICE_INVALID_SERVER_OPTION',
      message: expect.stringContaining('`address`'),
    }),
  );
});

it.each([
  'rate-limit:8081',
  'rate-limit',
  '[::1]:8081',
  '[fe80::1%eth0]:8081',
  'dns:rate-limit:8081',
  'dns:///rate-limit:8081',
  'dns://8.8.8.8/rate-limit:8081',
  'ipv4:10.0.0.1:8081,10.0.0.2:8081',
  'ipv6:[::1]:8081',
  'ipv4:///127.0.0.1:8081',
  'unix:/run/sluice.sock',
  'unix:///run/sluice.sock',
  'unix-abstract:sluice',
])('takes the gRPC target %s', async (address) => {
  await createServiceClient({ ...good, address, logger: { warn() {} } }).close();
});

it('takes a domain of exactly 256 characters', async () => {
  await createServiceClient({ ...good, domain: 'd'.repeat(256), logger: { warn() {} } }).close();
});

// The service counts by `<policy name>: <client key>`, so a prefix would not part two limiters.
it('two limiters with the same policies on one client are told to name their policies apart', async () => {
  const store = createServiceClient({ ...good, logger: { warn() {} } });
  const policies: PolicyOptions[] = [{ name: 'per-ip', limit: 5, window: '1m' }];
  createLimiter({ store, policies });
  expect(() => createLimiter({ store, policies })).toThrow(
    expect.objectContaining({
      code: 'ERR_SLUICE_NAMESPACE_TAKEN',
      message: expect.stringContaining('name their policies apart to count apart'),
    }),
  );
  await store.close();
});
