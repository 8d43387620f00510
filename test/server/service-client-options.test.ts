import { createLimiter, type PolicyOptions } from '@sluice/core';
import { createServiceClient } from '@sluice/server';
import { expect, it } from 'vitest';

const good = { address: '127.0.0.1:8081', domain: 'api' };

// Each was taken without a word and failed at every decision instead (or, for `deadline`, was
// ignored): a gRPC target with a URL scheme fails name resolution, a domain over 256 characters
// is refused by the service, a logger without `warn` threw out of the gRPC callback.
it.each([
  [{ ...good, deadline: 50 }, 'ERR_SLUICE_UNKNOWN_OPTION', '`deadlineMs`'],
  [{ ...good, address: 'http://127.0.0.1:8081' }, 'ERR_SLUICE_INVALID_SERVER_OPTION', '`address`'],
  [{ ...good, domain: 'd'.repeat(257) }, 'ERR_SLUICE_INVALID_SERVER_OPTION', '`domain`'],
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
