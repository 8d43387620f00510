import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnvoyClient } from '../helpers/envoy-client.js';
import { clusterTarget, type RedisClusterHandle } from '../helpers/redis-cluster.js';
import { type ServingSluice, startSluice } from '../helpers/sluice-process.js';

const rules = new URL('./fixtures/edge.yaml', import.meta.url).pathname;
const target = clusterTarget();

describe.skipIf(target.skip)('sluice serve --redis-cluster', () => {
  let cluster: RedisClusterHandle;
  let sluice: ServingSluice;
  beforeAll(async () => {
    cluster = await target.require()();
    const nodes = cluster.nodes.map((n) => `${n.host}:${n.port}`).join(',');
    sluice = await startSluice(['--rules', rules, '--redis-cluster', nodes, '--store-timeout-ms', '2000']);
  });
  afterAll(async () => {
    await sluice?.kill();
    await cluster?.stop();
  });

  it('decides on the cluster, every descriptor on its own slot, all or nothing', async () => {
    const envoy = createEnvoyClient(sluice.grpcAddress);
    try {
      const values = Array.from({ length: 4 }, (_, i) => `cluster-${i}-${process.pid}-${Date.now()}`);
      const descriptor = (value: string) => ({ entries: [{ key: 'remote_address', value }] });
      const ask = (list: string[]) => envoy.shouldRateLimit({ domain: 'edge', descriptors: list.map(descriptor) });
      expect((await ask(values)).overall_code).toBe('OK');
      // Spend the first value's last two units alone, then ask for all four again.
      await ask([values[0] as string]);
      await ask([values[0] as string]);
      const refused = await ask(values);
      expect(refused.overall_code).toBe('OVER_LIMIT');
      expect(refused.statuses?.map((s) => s.code)).toEqual(['OVER_LIMIT', 'OK', 'OK', 'OK']);
      // The refusal spent nothing on the other three: each still has 2 of 3 before this call.
      for (const value of values.slice(1)) expect((await ask([value])).statuses?.[0]?.limit_remaining).toBe(1);
    } finally {
      envoy.close();
    }
  });
});
