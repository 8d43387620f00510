import { createRedisStore } from '@sluice/redis';
import { Cluster, Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';

/** Collects what the store logs; these clients are never connected. */
const warningsFor = (client: Redis | Cluster): string[] => {
  const warnings: string[] = [];
  createRedisStore({ client, logger: { warn: (message) => warnings.push(message) } });
  client.disconnect();
  return warnings;
};

/** A Cluster set up as the README says (no re-sends), with `options` beside; never connected. */
const clusterWith = (options: { enableAutoPipelining?: boolean; enableOfflineQueue?: boolean } = {}) =>
  new Cluster([{ host: '127.0.0.1', port: 7100 }], {
    lazyConnect: true,
    retryDelayOnFailover: 0,
    retryDelayOnTryAgain: 0,
    retryDelayOnClusterDown: 0,
    ...options,
  });

describe('the store warns about a client that would re-send decisions after a reconnect', () => {
  it('warns once, with its code, for a standalone client on ioredis defaults', () => {
    const warnings = warningsFor(new Redis({ lazyConnect: true }));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('WRN_SLUICE_REDIS_RESENDS');
    expect(warnings[0]).toContain('maxRetriesPerRequest: 0');
  });

  it('stays quiet for a client created with maxRetriesPerRequest: 0', () => {
    expect(warningsFor(new Redis({ lazyConnect: true, maxRetriesPerRequest: 0 }))).toEqual([]);
  });

  it('does not judge a Cluster by a standalone setting', () => {
    expect(warningsFor(clusterWith())).toEqual([]);
  });

  // A call refused with TRYAGAIN while its slot migrates was sent again 100 ms later, past the
  // store's timeout: a request the fail policy had answered was charged all the same.
  it('warns about a Cluster that re-sends a call refused with TRYAGAIN after a delay', () => {
    const warnings = warningsFor(
      new Cluster([{ host: '127.0.0.1', port: 7100 }], {
        lazyConnect: true,
        retryDelayOnFailover: 0,
        retryDelayOnClusterDown: 0,
      }),
    );
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('WRN_SLUICE_CLUSTER_RESENDS');
    expect(warnings[0]).toContain('retryDelayOnTryAgain: 0');
  });

  // While a master is marked failed and no replica has taken over, every master answers
  // CLUSTERDOWN; ioredis held such a call 100 ms and sent it again, past the store's timeout.
  it('warns about a Cluster that re-sends a call refused with CLUSTERDOWN after a delay', () => {
    const warnings = warningsFor(
      new Cluster([{ host: '127.0.0.1', port: 7100 }], {
        lazyConnect: true,
        retryDelayOnFailover: 0,
        retryDelayOnTryAgain: 0,
      }),
    );
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('WRN_SLUICE_CLUSTER_RESENDS');
    expect(warnings[0]).toContain('retryDelayOnClusterDown: 0');
  });

  it('a Cluster client on defaults (no retryDelayOnFailover: 0) used to get no warning: now it does, once', () => {
    const warnings = warningsFor(new Cluster([{ host: '127.0.0.1', port: 7100 }], { lazyConnect: true }));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('WRN_SLUICE_CLUSTER_RESENDS');
    expect(warnings[0]).toContain('retryDelayOnFailover: 0');
  });

  it('warns about a Cluster that pipelines automatically: ioredis does not redirect a call answered MOVED or ASK beside others', () => {
    const warnings = warningsFor(clusterWith({ enableAutoPipelining: true }));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('WRN_SLUICE_CLUSTER_AUTO_PIPELINING');
    expect(warnings[0]).toContain('without `enableAutoPipelining`');
  });

  // Each master's connection opens on its first call, and a call sent meanwhile failed: 28 of
  // the first 50 decisions on three masters got the fail policy.
  it('warns about a Cluster without an offline queue: its first calls to each master fail while it connects', () => {
    const warnings = warningsFor(clusterWith({ enableOfflineQueue: false }));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('WRN_SLUICE_CLUSTER_OFFLINE_QUEUE');
  });

  it('leaves enableOfflineQueue: false on a standalone client alone: its one connection is opened before the first call', () => {
    const client = new Redis({ lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false });
    expect(warningsFor(client)).toEqual([]);
  });

  it('leaves auto-pipelining on a standalone client alone: a single Redis sends no redirects', () => {
    const client = new Redis({ lazyConnect: true, maxRetriesPerRequest: 0, enableAutoPipelining: true });
    expect(warningsFor(client)).toEqual([]);
  });

  it('refuses a logger without warn', () => {
    const client = new Redis({ lazyConnect: true, maxRetriesPerRequest: 0 });
    expect(() => createRedisStore({ client, logger: {} as never })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_LOGGER' }),
    );
    client.disconnect();
  });
});
