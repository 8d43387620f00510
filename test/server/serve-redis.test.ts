import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ServiceError, status } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnvoyClient, createHealthClient } from '../helpers/envoy-client.js';
import { connectRedis, isCi } from '../helpers/redis-env.js';
import { type RedisProxy, startRedisProxy } from '../helpers/redis-proxy.js';
import { hasRedisServer, type RedisServer, startRedisServer, waitFor } from '../helpers/redis-server.js';
import { exitOf, runSluice, startSluice } from '../helpers/sluice-process.js';

const rules = new URL('./fixtures/edge.yaml', import.meta.url).pathname;
const skip = !hasRedisServer() && !isCi;
const one = (key: string, value: string) => ({ domain: 'edge', descriptors: [{ entries: [{ key, value }] }] });
const outcome = (promise: Promise<{ overall_code?: string }>) =>
  promise.then(
    (response) => response.overall_code,
    (error: ServiceError) => error.code,
  );

describe.skipIf(skip)('sluice serve on Redis', () => {
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await startRedisServer();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  it('admits exactly the limit from 500 calls in flight over five channels', async () => {
    for (const store of [[], ['--redis', redis.url]]) {
      // A loaded test machine can take longer than the default 100 ms to answer 500 calls.
      const sluice = await startSluice(['--rules', rules, '--store-timeout-ms', '2500', ...store]);
      const clients = Array.from({ length: 5 }, () => createEnvoyClient(sluice.grpcAddress));
      try {
        const value = `exact-${store.length}-${process.pid}`;
        const calls = clients.flatMap((client) =>
          Array.from({ length: 100 }, () => client.shouldRateLimit(one('exact', value))),
        );
        const codes = await Promise.all(calls.map((call) => outcome(call)));
        expect(codes.filter((c) => c === 'OK')).toHaveLength(100);
        expect(codes.filter((c) => c === 'OVER_LIMIT')).toHaveLength(400);
      } finally {
        for (const client of clients) client.close();
        await sluice.kill();
      }
    }
  });

  it('decides all descriptors of a call at once: a refused call spends nothing, not even for a moment', async () => {
    for (const store of [[], ['--redis', redis.url]]) {
      const sluice = await startSluice(['--rules', rules, '--store-timeout-ms', '2500', ...store]);
      const clients = Array.from({ length: 5 }, () => createEnvoyClient(sluice.grpcAddress));
      try {
        const shared = { entries: [{ key: 'exact', value: `atomic-${store.length}-${process.pid}` }] };
        const spent = { entries: [{ key: 'remote_address', value: `spent-${store.length}-${process.pid}` }] };
        for (let i = 0; i < 3; i++) await clients[0]?.shouldRateLimit({ domain: 'edge', descriptors: [spent] });
        // Half the calls are refused by the spent counter; the shared one (limit 100) decides
        // beside it. A charge they made there, even one given back later, would refuse others.
        const calls = clients.flatMap((client) =>
          Array.from({ length: 100 }, (_, i) =>
            outcome(client.shouldRateLimit({ domain: 'edge', descriptors: i % 2 ? [shared, spent] : [shared] })).then(
              (code) => ({ refusable: i % 2 === 1, code }),
            ),
          ),
        );
        const answers = await Promise.all(calls);
        expect(answers.filter((a) => a.refusable && a.code !== 'OVER_LIMIT')).toHaveLength(0);
        expect(answers.filter((a) => !a.refusable && a.code === 'OK')).toHaveLength(100);
        const left = await clients[0]?.shouldRateLimit({ domain: 'edge', descriptors: [shared], hits_addend: 0 });
        expect(left?.statuses?.[0]?.limit_remaining).toBe(0);
      } finally {
        for (const client of clients) client.close();
        await sluice.kill();
      }
    }
  });

  // A replica that cached a refusal kept refusing the client until the cached wait ended, though
  // another replica had meanwhile given back the charge that caused it (its charge-and-refund
  // path): the service's store keeps no deny cache, so every refusal is Redis's own.
  it('asks Redis about every refused call, so no replica answers from a refusal another undid', async () => {
    const sluice = await startSluice(['--rules', rules, '--redis', redis.url]);
    const envoy = createEnvoyClient(sluice.grpcAddress);
    const admin = await connectRedis(redis.url);
    const scriptCalls = async () => {
      const stats = await admin.info('commandstats');
      return [...stats.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)].reduce((sum, m) => sum + Number(m[1]), 0);
    };
    try {
      const client = one('remote_address', `refused-${process.pid}`);
      for (let i = 0; i < 3; i++) expect((await envoy.shouldRateLimit(client)).overall_code).toBe('OK');
      const before = await scriptCalls();
      for (let i = 0; i < 3; i++) expect((await envoy.shouldRateLimit(client)).overall_code).toBe('OVER_LIMIT');
      expect((await scriptCalls()) - before).toBe(3);
    } finally {
      admin.disconnect();
      envoy.close();
      await sluice.kill();
    }
  });

  it('exit 1 for a database the Redis does not have (it started, and counted in database 0)', async () => {
    const anyPorts = ['--grpc-port', '0', '--http-port', '0'];
    const { code, output } = await exitOf(['serve', '--rules', rules, ...anyPorts, '--redis', `${redis.url}/99`]);
    expect(code).toBe(1);
    expect(output).toContain('ERR_SLUICE_STORE_CONNECT');
    expect(output).toMatch(/DB index is out of range/);
  });

  it('keeps the rules in force when a reload brings a rule the Redis store cannot decide', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-many-policies-'));
    const file = join(dir, 'rules.yaml');
    const rule = (count: number) => {
      const policies = Array.from({ length: count }, (_, i) => `      - { name: p${i}, limit: 5, window: 1h }`);
      return `domain: edge\ndescriptors:\n  - key: k\n    policies:\n${policies.join('\n')}\n`;
    };
    writeFileSync(file, rule(2));
    // A busy machine's Redis call can take past the default 100 ms: the call below is not about that.
    const sluice = await startSluice(['--rules', file, '--redis', redis.url, '--store-timeout-ms', '2500']);
    const envoy = createEnvoyClient(sluice.grpcAddress);
    try {
      writeFileSync(file, rule(17));
      await waitFor('the reload to be refused', async () =>
        sluice.lines.some((line) => line.msg === 'rules not reloaded; keeping the last good set'),
      );
      expect(sluice.output()).toContain('ERR_SLUICE_RULES_INVALID_POLICY');
      expect((await envoy.shouldRateLimit(one('k', `kept-${process.pid}`))).overall_code).toBe('OK');
    } finally {
      envoy.close();
      await sluice.kill();
    }
  });

  it('keeps running when Redis dies: NOT_SERVING and UNAVAILABLE, then serving again when it is back', async () => {
    const sluice = await startSluice(['--rules', rules, '--redis', redis.url]);
    const envoy = createEnvoyClient(sluice.grpcAddress);
    const health = () => fetch(`${sluice.httpUrl}/healthcheck`).then((r) => r.status);
    try {
      const value = `redis-loss-${process.pid}`;
      expect(await outcome(envoy.shouldRateLimit(one('remote_address', value)))).toBe('OK');
      await redis.kill();
      await waitFor('NOT_SERVING', async () => (await health()) === 503);
      const grpcHealth = createHealthClient(sluice.grpcAddress);
      expect(await grpcHealth.check('envoy.service.ratelimit.v3.RateLimitService')).toBe('NOT_SERVING');
      expect(await outcome(envoy.shouldRateLimit(one('remote_address', value)))).toBe(status.UNAVAILABLE);
      expect(sluice.child.exitCode).toBeNull();
      await redis.start();
      await waitFor('SERVING again', async () => (await health()) === 200);
      expect(await grpcHealth.check('envoy.service.ratelimit.v3.RateLimitService')).toBe('SERVING');
      grpcHealth.close();
      // The data did not survive the crash (no persistence here): a fresh count.
      const back = await envoy.shouldRateLimit(one('remote_address', value));
      expect(back.overall_code).toBe('OK');
      expect(sluice.lines.some((l) => l.msg === 'store unavailable; not serving')).toBe(true);
      expect(sluice.lines.some((l) => l.msg === 'store answers again; serving')).toBe(true);
    } finally {
      envoy.close();
      expect(await sluice.kill()).toBe(0);
    }
  });

  describe('SIGTERM with calls in flight', () => {
    let proxy: RedisProxy;
    beforeAll(async () => {
      if (redis.port === 0) return;
      proxy = await startRedisProxy(redis.port);
    });
    afterAll(async () => {
      await proxy?.close();
    });

    it('finishes the calls it accepted, refuses new ones, closes Redis and exits 0', async () => {
      const sluice = await startSluice([
        '--rules',
        rules,
        '--redis',
        `redis://127.0.0.1:${proxy.port}`,
        '--store-timeout-ms',
        '10000',
        '--request-timeout-ms',
        '40000',
      ]);
      const envoy = createEnvoyClient(sluice.grpcAddress);
      const value = `sigterm-${process.pid}`;
      await envoy.shouldRateLimit(one('exact', value));
      proxy.hold();
      const grpcCalls = Array.from({ length: 20 }, () => outcome(envoy.shouldRateLimit(one('exact', value))));
      const httpCall = fetch(`${sluice.httpUrl}/json`, { method: 'POST', body: JSON.stringify(one('exact', value)) });
      await waitFor('the calls to reach Redis', async () => proxy.heldBytes > 0);
      sluice.child.kill('SIGTERM');
      await waitFor('shutdown to begin', async () =>
        sluice.lines.some((l) => String(l.msg).startsWith('shutting down')),
      );
      const late = createEnvoyClient(sluice.grpcAddress);
      expect(await outcome(late.shouldRateLimit(one('exact', value)))).toBe(status.UNAVAILABLE);
      late.close();
      proxy.release();
      expect(await Promise.all(grpcCalls)).toEqual(Array(20).fill('OK'));
      expect((await httpCall).status).toBe(200);
      // The client keeps its channel open, as Envoy does: shutdown must not wait for it.
      const stoppedAt = performance.now();
      expect(await sluice.exited).toBe(0);
      expect(performance.now() - stoppedAt).toBeLessThan(5000);
      envoy.close();
      expect(sluice.lines.at(-1)?.msg).toBe('stopped');
    });

    // Reloads before the server (and its metrics) existed were logged and never counted.
    it('counts a rules reload made while it waits for Redis at start-up', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'sluice-early-reload-'));
      const file = join(dir, 'rules.yaml');
      const limited = (limit: number) =>
        `domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: hour, requests_per_unit: ${limit} }\n`;
      writeFileSync(file, limited(3));
      proxy.hold();
      const ports = ['--host', '127.0.0.1', '--grpc-port', '0', '--http-port', '0'];
      const sluice = runSluice(['serve', ...ports, '--rules', dir, '--redis', `redis://127.0.0.1:${proxy.port}`]);
      try {
        // Its first command to Redis comes once the rules are watched.
        await waitFor('sluice to reach Redis', async () => proxy.heldBytes > 0);
        writeFileSync(file, limited(7));
        const logged = (msg: string) => async () => sluice.lines.some((line) => line.msg === msg);
        await waitFor('the reload', logged('rules reloaded'));
        proxy.release();
        await waitFor('sluice to listen', logged('listening'));
        const listening = sluice.lines.find((line) => line.msg === 'listening');
        const metrics = await (await fetch(`http://127.0.0.1:${listening?.httpPort}/metrics`)).text();
        expect(metrics).toMatch(/^sluice_service_config_loads_total\{result="success"\} 2$/m);
        const asked = await fetch(`http://127.0.0.1:${listening?.httpPort}/json`, {
          method: 'POST',
          body: JSON.stringify(one('k', `early-${process.pid}`)).replace('"edge"', '"d"'),
        });
        expect(
          ((await asked.json()) as { statuses: { currentLimit: { requestsPerUnit: number } }[] }).statuses[0]
            ?.currentLimit.requestsPerUnit,
        ).toBe(7);
      } finally {
        proxy.release();
        await sluice.kill();
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });
});
