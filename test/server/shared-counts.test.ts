import { rateLimit } from '@sluice/express';
import { createRedisStore } from '@sluice/redis';
import { loadRules } from '@sluice/rules';
import express from 'express';
import { Redis } from 'ioredis';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnvoyClient } from '../helpers/envoy-client.js';
import { isCi } from '../helpers/redis-env.js';
import { hasRedisServer, type RedisServer, startRedisServer } from '../helpers/redis-server.js';
import { type ServingSluice, startSluice } from '../helpers/sluice-process.js';

const rulesFile = new URL('./fixtures/edge.yaml', import.meta.url).pathname;

describe.skipIf(!hasRedisServer() && !isCi)('an adapter and the service on one Redis', () => {
  let redis: RedisServer;
  let client: Redis;
  let sluice: ServingSluice;
  beforeAll(async () => {
    redis = await startRedisServer();
    client = new Redis(redis.url, { maxRetriesPerRequest: 0 });
    sluice = await startSluice(['--rules', rulesFile, '--redis', redis.url]);
  });
  afterAll(async () => {
    client?.disconnect();
    await sluice?.kill();
    await redis?.stop();
  });

  it('count into one quota: what an Express app spent, the service sees, and the other way round', async () => {
    const app = express();
    app.use(
      rateLimit({
        rules: await loadRules(rulesFile),
        descriptors: [['remote_address']],
        store: createRedisStore({ client }),
      }),
    );
    app.get('/', (_, res) => res.send('ok'));
    expect((await request(app).get('/')).status).toBe(200);
    const envoy = createEnvoyClient(sluice.grpcAddress);
    const descriptors = [{ entries: [{ key: 'remote_address', value: '127.0.0.1' }] }];
    const seen = await envoy.shouldRateLimit({ domain: 'edge', descriptors });
    // The limit is 3: one spent by Express, one now.
    expect(seen.statuses?.[0]?.limit_remaining).toBe(1);
    expect((await request(app).get('/')).status).toBe(200);
    expect((await envoy.shouldRateLimit({ domain: 'edge', descriptors })).overall_code).toBe('OVER_LIMIT');
    expect((await request(app).get('/')).status).toBe(429);
    envoy.close();
  });
});
