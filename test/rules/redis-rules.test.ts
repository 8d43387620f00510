import { randomUUID } from 'node:crypto';
import {
  publishRules,
  type RedisRulesClient,
  type RulesError,
  type RulesWatcher,
  watchRedisRules,
} from '@sluice/rules';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it, onTestFinished, vi } from 'vitest';
import { clusterTarget, connectCluster } from '../helpers/redis-cluster.js';
import { connectRedis, standaloneRedis, waitReady } from '../helpers/redis-env.js';
import { hasRedisServer, type RedisServer, startRedisServer } from '../helpers/redis-server.js';

const redis = await standaloneRedis();
const cluster = clusterTarget();
const perIp = (limit: number) =>
  `domain: edge\ndescriptors:\n  - key: ip\n    rate_limit: { unit: second, requests_per_unit: ${limit} }\n`;
const limitOf = (watcher: RulesWatcher) =>
  watcher.current.matchOne('edge', [{ key: 'ip', value: '1' }])?.rule.policies[0]?.limit;
/** A bounded wait for what a publish leads to on another connection. */
const eventually = (check: () => void) => vi.waitFor(check, { timeout: 5000, interval: 5 });

describe.skipIf(redis.skip)('rules from Redis', () => {
  let client: Redis;
  const key = `sluice-test:rules:${randomUUID()}`;
  const open: RulesWatcher[] = [];
  const watch = async (options: Partial<Parameters<typeof watchRedisRules>[0]> = {}) => {
    const watcher = await watchRedisRules({ client, key, onError: () => {}, ...options });
    open.push(watcher);
    return watcher;
  };

  beforeAll(async () => {
    client = await connectRedis(redis.require());
  });
  afterEach(async () => {
    await Promise.all(open.splice(0).map((w) => w.close()));
  });
  afterAll(async () => {
    await client?.del(key);
    client?.disconnect();
  });

  it('a publish reaches every server of a fleet through the channel', async () => {
    await publishRules(client, key, perIp(10));
    // Polling is out of the way: only the published message can bring the change.
    const fleet = [await watch({ pollIntervalMs: 600_000 }), await watch({ pollIntervalMs: 600_000 })];
    expect(fleet.map(limitOf)).toEqual([10, 10]);
    await publishRules(client, key, perIp(20));
    await eventually(() => expect(fleet.map(limitOf)).toEqual([20, 20]));
    expect(fleet.map((w) => w.reloads)).toEqual([1, 1]);
  });

  it('polling catches a change whose message was lost', async () => {
    await publishRules(client, key, perIp(10));
    const watcher = await watch({ pollIntervalMs: 20 });
    await client.hset(key, 'document', perIp(30), 'version', 'written-without-a-message');
    await eventually(() => expect(limitOf(watcher)).toBe(30));
  });

  it('publishRules refuses a bad document and changes nothing', async () => {
    await publishRules(client, key, perIp(10));
    const version = await client.hget(key, 'version');
    const misspelt = perIp(10).replace('requests_per_unit', 'request_per_unit');
    await expect(publishRules(client, key, misspelt)).rejects.toMatchObject({
      problems: expect.arrayContaining([expect.objectContaining({ code: 'ERR_SLUICE_RULES_UNKNOWN_KEY' })]),
    });
    expect(await client.hget(key, 'version')).toBe(version);
  });

  it('a bad document stored anyway keeps the set in force and is reported', async () => {
    await publishRules(client, key, perIp(10));
    const errors: RulesError[] = [];
    const watcher = await watch({ pollIntervalMs: 600_000, onError: (e) => errors.push(e) });
    await client.hset(key, 'document', 'domain: edge\ndescriptors: [');
    await client.publish(`${key}:changed`, 'x');
    await eventually(() => expect(errors).toHaveLength(1));
    expect(errors[0]?.code).toBe('ERR_SLUICE_RULES_SYNTAX');
    expect([limitOf(watcher), watcher.errors]).toEqual([10, 1]);
  });

  it('a bad document left in place is reported once, not on every poll', async () => {
    await publishRules(client, key, perIp(10));
    const errors: RulesError[] = [];
    const watcher = await watch({ pollIntervalMs: 600_000, onError: (e) => errors.push(e) });
    await client.hset(key, 'document', perIp(20).replace('second', 'fortnight'), 'version', 'bad');
    // What each poll does, three times over.
    for (let i = 0; i < 3; i++) await watcher.reload();
    expect(errors.map((e) => e.code)).toEqual(['ERR_SLUICE_RULES_INVALID_VALUE']);
    expect([limitOf(watcher), watcher.errors]).toEqual([10, 1]);
  });

  // Each poll found the key missing, counted Redis as answering, and reported the same failed
  // read again: 720 errors an hour at the default poll, each a log line of `sluice serve`.
  it('a deleted key is reported once, not at every poll, and read again once published', async () => {
    const doomed = `${key}:deleted`;
    onTestFinished(() => client.del(doomed).then(() => {}));
    await publishRules(client, doomed, perIp(10));
    let polls = 0;
    const counting = {
      hget: (...args: Parameters<Redis['hget']>) => {
        polls++;
        return client.hget(...args);
      },
      hgetall: (name: string) => client.hgetall(name),
      duplicate: (...args: Parameters<Redis['duplicate']>) => client.duplicate(...args),
    };
    const errors: RulesError[] = [];
    const watcher = await watch({
      client: counting as unknown as RedisRulesClient,
      key: doomed,
      pollIntervalMs: 10,
      onError: (e) => errors.push(e),
    });
    await client.del(doomed);
    await eventually(() => expect(polls).toBeGreaterThanOrEqual(10));
    expect(errors.map((e) => e.code)).toEqual(['ERR_SLUICE_RULES_READ']);
    expect(limitOf(watcher)).toBe(10);
    await publishRules(client, doomed, perIp(20));
    await eventually(() => expect(limitOf(watcher)).toBe(20));
    expect(watcher.errors).toBe(1);
  });

  it('an empty document is refused: by publishRules, and by a watcher that keeps its set', async () => {
    await publishRules(client, key, perIp(10));
    await expect(publishRules(client, key, '# nothing yet\n')).rejects.toMatchObject({
      code: 'ERR_SLUICE_RULES_MISSING_KEY',
    });
    const errors: RulesError[] = [];
    const watcher = await watch({ pollIntervalMs: 600_000, onError: (e) => errors.push(e) });
    await client.hset(key, 'document', '', 'version', 'empty');
    await watcher.reload();
    expect(errors.map((e) => e.code)).toEqual(['ERR_SLUICE_RULES_MISSING_KEY']);
    expect([limitOf(watcher), watcher.current.domains]).toEqual([10, ['edge']]);
  });

  it('a missing key rejects at start-up; bad options throw', async () => {
    await expect(watchRedisRules({ client, key: `${key}:missing` })).rejects.toMatchObject({
      code: 'ERR_SLUICE_RULES_READ',
    });
    await expect(watchRedisRules({ client: {} as never, key })).rejects.toMatchObject({
      code: 'ERR_SLUICE_INVALID_CLIENT',
    });
    await expect(watchRedisRules({ client, key, pollIntervalMs: 0 })).rejects.toMatchObject({
      code: 'ERR_SLUICE_INVALID_OPTION',
    });
  });

  it('misspelt options, and keys or channels that are not text, are refused (they were ignored or coerced)', async () => {
    await publishRules(client, key, perIp(10));
    await expect(watchRedisRules({ client, key, pollIntervalMS: 10 } as never)).rejects.toMatchObject({
      code: 'ERR_SLUICE_UNKNOWN_OPTION',
      message: expect.stringContaining('pollIntervalMS'),
    });
    for (const bad of [{ key: 42 }, { key: '' }, { key: ['a'] }, { channel: 7 }, { onReload: 'log' }]) {
      await expect(watchRedisRules({ client, key, ...bad } as never)).rejects.toMatchObject({
        code: 'ERR_SLUICE_INVALID_OPTION',
      });
    }
    await expect(publishRules(client, 42 as never, perIp(10))).rejects.toMatchObject({
      code: 'ERR_SLUICE_INVALID_OPTION',
    });
    await expect(publishRules(client, key, perIp(10), { chanel: 'x' } as never)).rejects.toMatchObject({
      code: 'ERR_SLUICE_UNKNOWN_OPTION',
    });
    await expect(publishRules({} as never, key, perIp(10))).rejects.toMatchObject({
      code: 'ERR_SLUICE_INVALID_CLIENT',
    });
    expect(await client.exists('42')).toBe(0);
  });

  it('publishRules on a key that holds another type rejects with a code and Redis error as cause', async () => {
    const taken = `${key}:a-string`;
    await client.set(taken, 'not a hash');
    onTestFinished(() => client.del(taken).then(() => undefined));
    const refused = await publishRules(client, taken, perIp(10)).catch((error: unknown) => error);
    expect(refused).toMatchObject({
      code: 'ERR_SLUICE_STORE_UNAVAILABLE',
      message: expect.stringContaining('WRONGTYPE'),
      cause: expect.objectContaining({ message: expect.stringContaining('WRONGTYPE') }),
    });
    expect(await client.get(taken)).toBe('not a hash');
  });

  it('a publish made while a server starts (between its first read and its subscription) is seen at once', async () => {
    await publishRules(client, key, perIp(10));
    // The publish lands after the watcher read the rules and before its subscription is in
    // place: its message reaches nobody, and a poll is ten minutes away.
    const late: RedisRulesClient = {
      hgetall: (k) => client.hgetall(k),
      hget: (k, field) => client.hget(k, field),
      hset: (k, ...fields) => client.hset(k, ...fields),
      publish: (channel, message) => client.publish(channel, message),
      duplicate: () => {
        const subscriber = client.duplicate();
        const subscribe = subscriber.subscribe.bind(subscriber);
        return Object.assign(subscriber, {
          subscribe: async (channel: string) => {
            await publishRules(client, key, perIp(50));
            return subscribe(channel);
          },
        });
      },
    };
    const watcher = await watch({ client: late, pollIntervalMs: 600_000 });
    await eventually(() => expect(limitOf(watcher)).toBe(50));
  });

  // Node runs a timer longer than 2^31 - 1 ms after 1 ms: a poll meant for once a month would
  // ask Redis a thousand times a second from every server.
  it('a poll longer than a timer can wait rejects at start-up', async () => {
    await publishRules(client, key, perIp(10));
    await expect(watchRedisRules({ client, key, pollIntervalMs: 2 ** 31 })).rejects.toMatchObject({
      code: 'ERR_SLUICE_INVALID_OPTION',
      message: expect.stringContaining('2147483647'),
    });
  });

  it('a poll reads the version, and the document only when the version changed', async () => {
    await publishRules(client, key, perIp(10));
    const reads = { hget: 0, hgetall: 0 };
    // The real client, its two reads counted.
    const counted = Object.create(client, {
      hget: {
        value: (...args: [string, string]) => {
          reads.hget++;
          return client.hget(...args);
        },
      },
      hgetall: {
        value: (name: string) => {
          reads.hgetall++;
          return client.hgetall(name);
        },
      },
      duplicate: { value: () => client.duplicate() },
    }) as Redis;
    vi.useFakeTimers({ toFake: ['setInterval'] });
    try {
      const watcher = await watch({ client: counted, pollIntervalMs: 1000 });
      for (let i = 0; i < 5; i++) vi.advanceTimersByTime(1000);
      // One look once subscribed, then one a poll.
      await eventually(() => expect(reads.hget).toBe(6));
      await client.ping();
      expect(reads.hgetall).toBe(1);
      // Written without a message: only the poll can find it.
      await client.hset(key, 'document', perIp(50), 'version', 'written-without-a-message');
      vi.advanceTimersByTime(1000);
      await eventually(() => expect(limitOf(watcher)).toBe(50));
      expect(reads).toEqual({ hget: 7, hgetall: 2 });
    } finally {
      vi.useRealTimers();
    }
  });

  it('a client made with enableOfflineQueue: false is watched (its subscription was refused while connecting)', async () => {
    const strict = new Redis(redis.require(), { enableOfflineQueue: false, maxRetriesPerRequest: 0 });
    strict.on('error', () => {});
    onTestFinished(() => strict.disconnect());
    await waitReady(strict, 5000);
    await publishRules(client, key, perIp(10));
    const watcher = await watch({ client: strict, pollIntervalMs: 600_000 });
    await publishRules(client, key, perIp(50));
    await eventually(() => expect(limitOf(watcher)).toBe(50));
  });

  it('a subscription Redis refuses rejects at start-up with ERR_SLUICE_RULES_READ and Redis error as cause', async () => {
    const user = `sluice-rules-${randomUUID()}`;
    await client.call('ACL', 'SETUSER', user, 'on', '>secret', '~*', '&*', '+@all', '-subscribe');
    onTestFinished(async () => {
      await client.call('ACL', 'DELUSER', user);
    });
    const limited = new Redis(redis.require(), { username: user, password: 'secret', maxRetriesPerRequest: 0 });
    limited.on('error', () => {});
    onTestFinished(() => limited.disconnect());
    await publishRules(client, key, perIp(10));
    const error = await watchRedisRules({ client: limited, key }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'ERR_SLUICE_RULES_READ' });
    expect((error as Error).message).toContain(`Cannot subscribe to "${key}:changed"`);
    expect(((error as Error).cause as Error).message).toContain('NOPERM');
  });

  it('a second outage with the same error is reported again (the poll that saw Redis back did not count)', async () => {
    await publishRules(client, key, perIp(10));
    const reader = await connectRedis(redis.require());
    onTestFinished(() => reader.disconnect());
    const errors: RulesError[] = [];
    const watcher = await watch({ client: reader, pollIntervalMs: 10, onError: (e) => errors.push(e) });
    for (let outage = 1; outage <= 2; outage++) {
      reader.disconnect();
      await eventually(() => expect(errors).toHaveLength(outage));
      await reader.connect();
      // A poll that reads the version, unchanged, while Redis answers.
      await eventually(() => expect(watcher.errors).toBe(outage));
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(errors.map((e) => e.code)).toEqual(['ERR_SLUICE_RULES_READ', 'ERR_SLUICE_RULES_READ']);
    expect(errors[0]?.message).toBe(errors[1]?.message);
  });

  it('close() ends the subscription: a later publish changes nothing', async () => {
    await publishRules(client, key, perIp(10));
    const closed = await watch({ pollIntervalMs: 600_000 });
    await closed.close();
    const live = await watch({ pollIntervalMs: 600_000 });
    await publishRules(client, key, perIp(40));
    await eventually(() => expect(limitOf(live)).toBe(40));
    expect(limitOf(closed)).toBe(10);
  });
});

// A Redis of its own, so it can be stopped and paused; a port of the range kept for such tests.
describe.skipIf(!hasRedisServer())('rules from a Redis that stops answering', () => {
  let server: RedisServer;
  let client: Redis;
  const key = `sluice-test:rules:${randomUUID()}`;
  const open: RulesWatcher[] = [];

  beforeAll(async () => {
    server = await startRedisServer([], 7414);
  });
  afterAll(async () => {
    await server?.stop();
  });
  // Each test starts with a fresh server, whatever the one before did to it.
  afterEach(async () => {
    await Promise.all(open.splice(0).map((w) => w.close()));
    client?.disconnect();
    await server.kill();
    await server.start();
  });
  const start = async (
    options: Partial<Parameters<typeof watchRedisRules>[0]> = {},
    wrap: (real: Redis) => Redis = (real) => real,
  ) => {
    // ioredis's defaults, as an app's client has them: a command waits through 20 reconnections.
    client = new Redis(server.port, '127.0.0.1');
    client.on('error', () => {});
    await publishRules(client, key, perIp(10));
    const watcher = await watchRedisRules({
      client: wrap(client),
      key,
      pollIntervalMs: 600_000,
      onError: () => {},
      ...options,
    });
    open.push(watcher);
    return watcher;
  };

  // Regression: the subscription waited for ever, with the poll and the subscriber's
  // reconnections left running and nothing to close them.
  it('a subscriber that cannot connect rejects start-up within the read timeout and is closed', async () => {
    client = new Redis(server.port, '127.0.0.1');
    client.on('error', () => {});
    await publishRules(client, key, perIp(10));
    // The app's own connection is the one Redis accepts.
    await client.config('SET', 'maxclients', '1');
    const closed: boolean[] = [];
    const duplicate = client.duplicate.bind(client);
    client.duplicate = (...override) => {
      const subscriber = duplicate(...override);
      const disconnect = subscriber.disconnect.bind(subscriber);
      closed.push(false);
      subscriber.disconnect = (reconnect) => {
        closed[0] = reconnect !== true;
        disconnect(reconnect);
      };
      return subscriber;
    };
    const error = await watchRedisRules({ client, key, readTimeoutMs: 300 }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'ERR_SLUICE_RULES_READ' });
    expect((error as Error).message).toContain('no reply within 300 ms');
    // Its reconnections end with it.
    expect(closed).toEqual([true]);
  });

  it('an outage is reported once, within the read timeout, and the set stays (each read waited a minute for the retries, unreported)', async () => {
    const errors: RulesError[] = [];
    let reads = 0;
    const counting = (real: Redis) =>
      Object.create(real, {
        hgetall: {
          value: (name: string) => {
            reads++;
            return real.hgetall(name);
          },
        },
      }) as Redis;
    // Long enough for the subscription at start-up on a loaded machine, which the same bound holds.
    const watcher = await start({ pollIntervalMs: 10, readTimeoutMs: 200, onError: (e) => errors.push(e) }, counting);
    await server.kill();
    await eventually(() => expect(errors).toHaveLength(1));
    // Polls go on reading, and failing the same way: still one report.
    const failedSoFar = reads;
    await eventually(() => expect(reads).toBeGreaterThanOrEqual(failedSoFar + 3));
    expect(errors.map((e) => [e.code, e.problems[0]?.message])).toEqual([
      ['ERR_SLUICE_RULES_READ', 'Cannot read the rules from Redis: no reply within 200 ms.'],
    ]);
    expect([limitOf(watcher), watcher.errors]).toEqual([10, 1]);
  });

  it('a read waits 2000 ms by default', async () => {
    const errors: RulesError[] = [];
    const watcher = await start({ onError: (e) => errors.push(e) });
    await server.kill();
    await eventually(() => expect(client.status).not.toBe('ready'));
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const reloading = watcher.reload();
      vi.advanceTimersByTime(1999);
      await Promise.resolve();
      expect(errors).toHaveLength(0);
      vi.advanceTimersByTime(1);
      await reloading;
    } finally {
      vi.useRealTimers();
    }
    expect(errors[0]?.problems[0]?.message).toBe('Cannot read the rules from Redis: no reply within 2000 ms.');
  });

  it('close() resolves with a read in flight, and the late reply swaps nothing (close waited for the reply)', async () => {
    const watcher = await start();
    await client.hset(key, 'document', perIp(20), 'version', 'unannounced');
    const admin = new Redis(server.port, '127.0.0.1');
    onTestFinished(() => admin.disconnect());
    await admin.call('CLIENT', 'PAUSE', '300', 'ALL');
    let settled = false;
    const reloading = watcher.reload().then(() => {
      settled = true;
    });
    await watcher.close();
    expect(settled).toBe(false);
    await reloading;
    expect([limitOf(watcher), watcher.reloads, watcher.errors]).toEqual([10, 0, 0]);
  });

  it('a read timeout that is no whole number of milliseconds, or beyond a timer, is refused at start-up', async () => {
    client = new Redis(server.port, '127.0.0.1');
    client.on('error', () => {});
    await publishRules(client, key, perIp(10));
    for (const readTimeoutMs of [0, 1.5, 2 ** 31, '2000'])
      await expect(watchRedisRules({ client, key, readTimeoutMs } as never)).rejects.toMatchObject({
        code: 'ERR_SLUICE_INVALID_OPTION',
        message: expect.stringContaining('readTimeoutMs'),
      });
  });
});

describe.skipIf(cluster.skip)('rules from a Redis Cluster', () => {
  it('a Cluster client made with enableOfflineQueue: false is watched, publishes and all', async () => {
    const handle = await cluster.require()();
    onTestFinished(() => handle.stop());
    const client = await connectCluster(handle.nodes, { enableOfflineQueue: false });
    onTestFinished(() => client.disconnect());
    const key = `sluice-test:rules:${randomUUID()}`;
    onTestFinished(async () => {
      await client.del(key);
    });
    await publishRules(client, key, perIp(10));
    const watcher = await watchRedisRules({ client, key, pollIntervalMs: 600_000 });
    onTestFinished(() => watcher.close());
    expect(limitOf(watcher)).toBe(10);
    await publishRules(client, key, perIp(60));
    await eventually(() => expect(limitOf(watcher)).toBe(60));
  });
});
