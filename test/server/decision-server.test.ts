import { channel } from 'node:diagnostics_channel';
import { connect } from 'node:net';
import { type Client, credentials, loadPackageDefinition, type StatusObject, status } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { createLimiter, createMemoryStore, type RateLimitStore, SLUICE_CHANNELS } from '@sluice/core';
import { createRedisStore } from '@sluice/redis';
import { parseRules } from '@sluice/rules';
import { createDecisionServer, createServiceClient } from '@sluice/server';
import { protoPath as healthProto } from 'grpc-health-check';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { createEnvoyClient } from '../helpers/envoy-client.js';
import { waitFor } from '../helpers/redis-server.js';

/** Which of sluice's channels have subscribers now. */
const channelSubscribers = () => Object.values(SLUICE_CHANNELS).filter((name) => channel(name).hasSubscribers);

const rules = parseRules(
  'domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: minute, requests_per_unit: 1 }\n',
);
const quietLog = { line() {}, warn() {} };

describe('createDecisionServer', () => {
  it.each([
    [{ rules: undefined }, 'ERR_SLUICE_INVALID_SERVER_OPTION', '`rules`'],
    // A path where the loaded set belongs: every string has a `match` method.
    [{ rules: './rules.yaml' }, 'ERR_SLUICE_INVALID_SERVER_OPTION', '`rules`'],
    [{ rules: { current: './rules.yaml' } }, 'ERR_SLUICE_INVALID_SERVER_OPTION', '`rules`'],
    [{ rules: { match: () => [] } }, 'ERR_SLUICE_INVALID_SERVER_OPTION', '`rules`'],
    [{ rules, grpcPort: 70_000 }, 'ERR_SLUICE_INVALID_SERVER_OPTION', '`grpcPort`'],
    [{ rules, httpPort: -1 }, 'ERR_SLUICE_INVALID_SERVER_OPTION', '`httpPort`'],
    [{ rules, storeTimeoutMs: 0 }, 'ERR_SLUICE_INVALID_SERVER_OPTION', '`storeTimeoutMs`'],
    [{ rules, host: '' }, 'ERR_SLUICE_INVALID_SERVER_OPTION', '`host`'],
    // Regressions: accepted, then `listen()` failed with DNS's ENOTFOUND.
    [{ rules, host: '127.0.0.1:80' }, 'ERR_SLUICE_INVALID_SERVER_OPTION', '`host`'],
    [{ rules, host: 'bad host!' }, 'ERR_SLUICE_INVALID_SERVER_OPTION', '`host`'],
    // Regressions: a wait past 2^31 - 1 ms made the shutdown timer fire after 1 ms and cut off
    // calls in flight; `store: null` became the memory store, and a string threw a TypeError.
    [{ rules, shutdownTimeoutMs: 2 ** 31 }, 'ERR_SLUICE_INVALID_SERVER_OPTION', '`shutdownTimeoutMs`'],
    [{ rules, storeTimeoutMs: 2 ** 40 }, 'ERR_SLUICE_INVALID_SERVER_OPTION', '`storeTimeoutMs`'],
    [{ rules, requestTimeoutMs: 0 }, 'ERR_SLUICE_INVALID_SERVER_OPTION', '`requestTimeoutMs`'],
    // A slow store would reset the call (DEADLINE_EXCEEDED) rather than fail it UNAVAILABLE.
    [
      { rules, requestTimeoutMs: 399 },
      'ERR_SLUICE_INVALID_SERVER_OPTION',
      'at most a quarter of `requestTimeoutMs` (399)',
    ],
    [{ rules, storeTimeoutMs: 5_000, requestTimeoutMs: 2_000 }, 'ERR_SLUICE_INVALID_SERVER_OPTION', '`storeTimeoutMs`'],
    [{ rules, grpcIdleTimeoutMs: 1.5 }, 'ERR_SLUICE_INVALID_SERVER_OPTION', '`grpcIdleTimeoutMs`'],
    // Regression: grpc-js reads 2^31 - 1 as no idle close and no pings.
    [{ rules, grpcIdleTimeoutMs: 2 ** 31 - 1 }, 'ERR_SLUICE_INVALID_SERVER_OPTION', '`grpcIdleTimeoutMs`'],
    [{ rules, store: null }, 'ERR_SLUICE_INVALID_SERVER_OPTION', '`store`'],
    [{ rules, store: 'redis' }, 'ERR_SLUICE_INVALID_SERVER_OPTION', '`store`'],
    [{ rules, headers: { standard: 'draft-9' } }, 'ERR_SLUICE_INVALID_HEADERS', 'headers.standard'],
    [{ rules, grpcport: 1 }, 'ERR_SLUICE_UNKNOWN_OPTION', '`grpcPort`'],
    // Regression: suggested `host`, the closest spelling.
    [{ rules, port: 1 }, 'ERR_SLUICE_UNKNOWN_OPTION', 'did you mean `grpcPort` (gRPC) or `httpPort` (HTTP)?'],
    // Regression: suggested `limit`, a limiter's name for express-rate-limit's `max`.
    [{ rules, max: 1 }, 'ERR_SLUICE_UNKNOWN_OPTION', 'Unknown option `max`.'],
    // Regressions: both were taken, then failed every call (the clock) or listen() and close() (the log).
    [{ rules, clock: () => 'now' }, 'ERR_SLUICE_INVALID_SERVER_OPTION', '`clock`'],
    [{ rules, log: console }, 'ERR_SLUICE_INVALID_SERVER_OPTION', '`log`'],
    [{ rules, failureModeDeny: 'true' }, 'ERR_SLUICE_INVALID_SERVER_OPTION', '`failureModeDeny`'],
  ])('refuses %o at construction', (options, code, mention) => {
    expect(() => createDecisionServer(options as never)).toThrow(expect.objectContaining({ code }));
    expect(() => createDecisionServer(options as never)).toThrow(mention);
  });

  // Such a set loaded, and then every call it matched failed INTERNAL, with health OK.
  it('refuses at construction a rule set its store cannot decide, naming the rule', () => {
    const policies = Array.from({ length: 17 }, (_, i) => `      - { name: p${i}, limit: 5, window: 1m }`);
    const many = parseRules(`domain: d\ndescriptors:\n  - key: k\n    policies:\n${policies.join('\n')}\n`);
    // The Redis store's own check of 1 to 16 policies, which needs no connection.
    const client = new Redis({ lazyConnect: true, maxRetriesPerRequest: 0 });
    const subscribers = channelSubscribers();
    try {
      const store = createRedisStore({ client, logger: { warn() {} } });
      expect(() => createDecisionServer({ rules: many, store, log: quietLog })).toThrow(
        expect.objectContaining({
          code: 'ERR_SLUICE_RULES_INVALID_POLICY',
          problems: [
            expect.objectContaining({ line: 3, message: expect.stringContaining('ERR_SLUICE_INVALID_POLICIES') }),
          ],
        }),
      );
      // The server that never started left no metrics subscribed to count every decision after.
      expect(channelSubscribers()).toEqual(subscribers);
    } finally {
      client.disconnect();
    }
  });

  it('listens on free ports, answers, and after close() frees them and refuses', async () => {
    const server = createDecisionServer({ rules, grpcPort: 0, httpPort: 0, host: '127.0.0.1', log: quietLog });
    const { grpcPort, httpPort } = await server.listen();
    const body = JSON.stringify({ domain: 'd', descriptors: [{ entries: [{ key: 'k', value: 'v' }] }] });
    expect((await fetch(`http://127.0.0.1:${httpPort}/json`, { method: 'POST', body })).status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${httpPort}/json`, { method: 'POST', body })).status).toBe(429);
    await server.close();
    await expect(fetch(`http://127.0.0.1:${httpPort}/healthcheck`)).rejects.toThrow();
    // Both ports can be bound again at once.
    const again = createDecisionServer({ rules, grpcPort, httpPort, host: '127.0.0.1', log: quietLog });
    await again.listen();
    await again.close();
  });

  // Regression: the answer to a call in flight kept its connection alive, so close() waited
  // out Node's keep-alive timeout, and a call sent on that connection meanwhile was decided.
  it('close() finishes a /json call in flight, closes its connection and decides nothing after', async () => {
    // The memory store, its answers held until released: the call is in flight when close() begins.
    const { consumeSync, consumeOneSync, ...memory } = createMemoryStore();
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let asked = 0;
    const store: RateLimitStore = {
      ...memory,
      async consume(request) {
        asked++;
        await held;
        return memory.consume(request);
      },
    };
    const server = createDecisionServer({
      rules: parseRules('domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: hour, requests_per_unit: 5 }\n'),
      store,
      grpcPort: 0,
      httpPort: 0,
      host: '127.0.0.1',
      log: quietLog,
      // Longer than the test may run: close() must not wait for it.
      shutdownTimeoutMs: 600_000,
    });
    const { httpPort } = await server.listen();
    const body = JSON.stringify({ domain: 'd', descriptors: [{ entries: [{ key: 'k', value: 'v' }] }] });
    const call = `POST /json HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
    const socket = connect(httpPort, '127.0.0.1');
    let received = '';
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('utf8');
    });
    const ended = new Promise((resolve) => socket.once('close', resolve));
    socket.write(call);
    await waitFor('the call to reach the store', async () => asked === 1);
    const closed = server.close();
    // A second close() waits for the same shutdown (it returned at once, while the call was in flight).
    const closedAgain = server.close().then(() => 'closed');
    const turn = new Promise((resolve) => setImmediate(() => resolve('still closing')));
    expect(await Promise.race([closedAgain, turn])).toBe('still closing');
    // A second call on the same connection, as a kept-alive client sends it.
    socket.write(call);
    release();
    await closed;
    expect(await closedAgain).toBe('closed');
    await ended;
    expect([...received.matchAll(/HTTP\/1\.1 (\d+)/g)].map((m) => m[1])).toEqual(['200']);
    expect(received).toMatch(/\r\nConnection: close\r\n/);
    expect(received).toContain('"limitRemaining":4');
    expect(asked).toBe(1);
  });

  // Regression: one connection to the gRPC port that never began HTTP/2 (a port scan, a client
  // stalled before its preface) held close() and SIGTERM for as long as its client kept it:
  // grpc-js's forced shutdown destroyed its session and left its socket open.
  it('close() ends, within shutdownTimeoutMs, a gRPC connection that never began HTTP/2', async () => {
    const server = createDecisionServer({
      rules,
      grpcPort: 0,
      httpPort: 0,
      host: '127.0.0.1',
      log: quietLog,
      shutdownTimeoutMs: 50,
    });
    const { grpcPort } = await server.listen();
    // A client that keeps its side open when the server ends its own, as a stalled one does.
    const idle = connect({ port: grpcPort, host: '127.0.0.1', allowHalfOpen: true });
    idle.on('error', () => {});
    await new Promise((resolve) => idle.once('connect', resolve));
    try {
      // Within the test's own timeout, far past shutdownTimeoutMs: it waited until the client left.
      await server.close();
    } finally {
      idle.destroy();
    }
  });

  // A call whose store never answered held close() for its whole storeTimeoutMs (up to 60 s)
  // after shutdownTimeoutMs had ended every connection: past Kubernetes' 30 s grace period.
  it('close() waits for a call on a store that never answers no longer than shutdownTimeoutMs', async () => {
    const { consumeSync, consumeOneSync, ...memory } = createMemoryStore();
    let asked = 0;
    const store: RateLimitStore = {
      ...memory,
      consume() {
        asked++;
        return new Promise(() => {});
      },
    };
    const server = createDecisionServer({
      rules,
      store,
      grpcPort: 0,
      httpPort: 0,
      host: '127.0.0.1',
      log: quietLog,
      storeTimeoutMs: 60_000,
      requestTimeoutMs: 240_000,
      shutdownTimeoutMs: 50,
    });
    const { httpPort } = await server.listen();
    const body = JSON.stringify({ domain: 'd', descriptors: [{ entries: [{ key: 'k', value: 'v' }] }] });
    const answered = fetch(`http://127.0.0.1:${httpPort}/json`, { method: 'POST', body }).then(
      (response) => response.status,
      () => 'connection ended',
    );
    await waitFor('the call to reach the store', async () => asked === 1);
    // Within the test's own timeout, far short of storeTimeoutMs: it waited for the store call.
    await server.close();
    expect(await answered).toBe('connection ended');
  });

  // Regression: a health check that arrived once close() had begun got the JSON refusal meant
  // for calls, which a probe reading `/healthcheck` as text does not parse.
  it('answers a /healthcheck that arrives during close() with NOT_SERVING text', async () => {
    const server = createDecisionServer({ rules, grpcPort: 0, httpPort: 0, host: '127.0.0.1', log: quietLog });
    const { httpPort } = await server.listen();
    const socket = connect(httpPort, '127.0.0.1');
    let received = '';
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('utf8');
    });
    const ended = new Promise((resolve) => socket.once('close', resolve));
    // One write: once the first answer is back, the server has read the start of the second
    // request, so close() finds the connection busy rather than idle and waits for it.
    const check = 'GET /healthcheck HTTP/1.1\r\nHost: x\r\n';
    socket.write(`${check}\r\n${check}`);
    await waitFor('the first answer', async () => received.includes('\r\n\r\nOK'));
    const closed = server.close();
    socket.write('\r\n');
    await closed;
    await ended;
    const answers = received.split(/(?=HTTP\/1\.1 )/);
    expect(answers).toHaveLength(2);
    expect(answers[1]).toMatch(/^HTTP\/1\.1 503 /);
    expect(answers[1]).toMatch(/\r\nContent-Type: text\/plain\r\n/);
    expect(answers[1]).toMatch(/\r\nConnection: close\r\n/);
    expect(answers[1]).toMatch(/\r\n\r\nNOT_SERVING$/);
  });

  // Regression: two rules counted by the minute, both named `per-minute` by default, put two
  // items of one name in response_headers_to_add, and the service said nothing.
  it('logs once when one answer names a policy twice in its RateLimit fields', async () => {
    const warnings: string[] = [];
    const server = createDecisionServer({
      rules: parseRules(
        'domain: d\ndescriptors:\n  - key: remote_address\n    rate_limit: { unit: minute, requests_per_unit: 10 }\n' +
          '  - key: path\n    value: /login\n    rate_limit: { unit: minute, requests_per_unit: 5 }\n',
      ),
      headers: { standard: 'draft-11' },
      clock: () => 0,
      grpcPort: 0,
      httpPort: 0,
      host: '127.0.0.1',
      log: { line() {}, warn: (message) => warnings.push(message) },
    });
    const { httpPort } = await server.listen();
    const ask = async (...descriptors: [string, string][]) => {
      const body = JSON.stringify({
        domain: 'd',
        descriptors: descriptors.map(([key, value]) => ({ entries: [{ key, value }] })),
      });
      const answer = (await (await fetch(`http://127.0.0.1:${httpPort}/json`, { method: 'POST', body })).json()) as {
        responseHeadersToAdd: { key: string; value: string }[];
      };
      return answer.responseHeadersToAdd.find((h) => h.key === 'RateLimit')?.value;
    };
    try {
      expect(await ask(['remote_address', '192.0.2.1'])).toBe('"per-minute";r=9;t=60');
      expect(warnings).toEqual([]);
      for (let i = 0; i < 2; i++) await ask(['remote_address', '192.0.2.1'], ['path', '/login']);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatch(/WRN_SLUICE_DUPLICATE_POLICY_NAME: policy "per-minute"/);
    } finally {
      await server.close();
    }
  });

  it('close() ends open Health/Watch streams with NOT_SERVING (it waited shutdownTimeoutMs for them)', async () => {
    const server = createDecisionServer({
      rules,
      grpcPort: 0,
      httpPort: 0,
      host: '127.0.0.1',
      log: quietLog,
      // Longer than the test may run: close() must not wait for it.
      shutdownTimeoutMs: 600_000,
    });
    const { grpcPort } = await server.listen();
    const api = loadPackageDefinition(loadSync(healthProto, { enums: String })) as unknown as {
      grpc: { health: { v1: { Health: new (a: string, c: unknown) => Client } } };
    };
    const health = new api.grpc.health.v1.Health(`127.0.0.1:${grpcPort}`, credentials.createInsecure());
    const watch = (health as unknown as { Watch(r: { service: string }): NodeJS.EventEmitter }).Watch({ service: '' });
    const seen: string[] = [];
    watch.on('data', (message: { status: string }) => seen.push(message.status));
    watch.on('error', () => {});
    const ended = new Promise<StatusObject>((resolve) => watch.on('status', resolve));
    await waitFor('the first status', async () => seen.length > 0);
    await server.close();
    expect((await ended).code).toBe(status.OK);
    expect(seen).toEqual(['SERVING', 'NOT_SERVING']);
    health.close();
  });
});

describe('quota_mode over the wire', () => {
  const entry = { domain: 'd', descriptors: [{ entries: [{ key: 'k', value: 'v' }] }] };

  it('listens on an IPv6 address, which gRPC reads only in brackets (it could not start)', async () => {
    const server = createDecisionServer({ rules, grpcPort: 0, httpPort: 0, host: '::1', log: quietLog });
    const { grpcPort, httpPort } = await server.listen();
    const envoy = createEnvoyClient(`[::1]:${grpcPort}`);
    try {
      expect((await envoy.shouldRateLimit(entry)).overall_code).toBe('OK');
      expect((await fetch(`http://[::1]:${httpPort}/healthcheck`)).status).toBe(200);
    } finally {
      envoy.close();
      await server.close();
    }
  });

  it("gives a second listen() the first one's ports, and leaves the gRPC server serving (it shut it down)", async () => {
    const server = createDecisionServer({ rules, grpcPort: 0, httpPort: 0, host: '127.0.0.1', log: quietLog });
    const first = await server.listen();
    expect(await server.listen()).toEqual(first);
    const envoy = createEnvoyClient(`127.0.0.1:${first.grpcPort}`);
    try {
      expect((await envoy.shouldRateLimit(entry)).overall_code).toBe('OK');
    } finally {
      envoy.close();
      await server.close();
    }
  });

  it('close() during listen() closes what listen() binds (both ports stayed bound, deciding)', async () => {
    const server = createDecisionServer({ rules, grpcPort: 0, httpPort: 0, host: '127.0.0.1', log: quietLog });
    const listening = server.listen();
    await server.close();
    const { grpcPort, httpPort } = await listening;
    await expect(fetch(`http://127.0.0.1:${httpPort}/healthcheck`)).rejects.toThrow();
    const again = createDecisionServer({ rules, grpcPort, httpPort, host: '127.0.0.1', log: quietLog });
    await again.listen();
    await again.close();
  });

  it('answers a gRPC call INTERNAL when even its failure cannot be logged (it was left to its deadline)', async () => {
    const rejections: unknown[] = [];
    const onRejection = (reason: unknown) => rejections.push(reason);
    process.on('unhandledRejection', onRejection);
    // A clock that reads well at start-up (the server's check, then the rule's limiter, made
    // there) and then gives no number, and a log sink that fails on error lines.
    let readings = 0;
    const clock = () => (readings++ < 2 ? 1_000 : Number.NaN);
    const log = {
      warn() {},
      line(level: string) {
        if (level === 'error') throw new Error('log sink down');
      },
    };
    const server = createDecisionServer({ rules, grpcPort: 0, httpPort: 0, host: '127.0.0.1', log, clock });
    const { grpcPort, httpPort } = await server.listen();
    const envoy = createEnvoyClient(`127.0.0.1:${grpcPort}`);
    try {
      await expect(envoy.shouldRateLimit(entry)).rejects.toMatchObject({ code: status.INTERNAL });
      // Over HTTP the log's own failure was the answer's message.
      const json = await fetch(`http://127.0.0.1:${httpPort}/json`, { method: 'POST', body: JSON.stringify(entry) });
      expect([json.status, await json.json()]).toEqual([
        500,
        { code: 'INTERNAL', message: 'the request could not be answered' },
      ]);
      await new Promise((resolve) => setImmediate(resolve));
      expect(rejections).toEqual([]);
    } finally {
      process.off('unhandledRejection', onRejection);
      envoy.close();
      await server.close();
    }
  });

  // Counted as `unavailable`, such a failure raised an operator's alert on the store's failures
  // while the store stayed up.
  // Its message went to the caller too, naming what the service keeps to itself; the log has it.
  it('counts a failure of its own as internal, apart from the store failing, and tells the caller no more', async () => {
    let readings = 0;
    const clock = () => (readings++ < 2 ? 1_000 : Number.NaN);
    const logged: unknown[] = [];
    const log = {
      warn() {},
      line: (level: string, message: string, fields: unknown) => logged.push({ level, message, fields }),
    };
    const server = createDecisionServer({ rules, grpcPort: 0, httpPort: 0, host: '127.0.0.1', log, clock });
    const { grpcPort, httpPort } = await server.listen();
    const envoy = createEnvoyClient(`127.0.0.1:${grpcPort}`);
    const told = 'the call could not be decided; the service logged why';
    try {
      await expect(envoy.shouldRateLimit(entry)).rejects.toMatchObject({ code: status.INTERNAL, details: told });
      const json = await fetch(`http://127.0.0.1:${httpPort}/json`, { method: 'POST', body: JSON.stringify(entry) });
      expect(json.status).toBe(500);
      expect(await json.json()).toEqual({ code: 'INTERNAL', message: told });
      const errors = logged.filter((line) => (line as { level: string }).level === 'error');
      expect(errors).toHaveLength(2);
      expect(JSON.stringify(errors)).toMatch(/clock/i);
      const metrics = await (await fetch(`http://127.0.0.1:${httpPort}/metrics`)).text();
      const calls = metrics.split('\n').filter((line) => line.startsWith('sluice_service_calls_total{'));
      expect(calls).toEqual([
        'sluice_service_calls_total{transport="grpc",result="internal"} 1',
        'sluice_service_calls_total{transport="http",result="internal"} 1',
      ]);
      expect(metrics).toContain('sluice_service_store_up 1');
    } finally {
      envoy.close();
      await server.close();
    }
  });

  // Callers are told only that the store failed: an error after the outage's first one (an
  // out-of-memory Redis turned replica) reached neither them nor the log.
  it("logs each of a store's errors once an outage, up to ten, and the callers none of them", async () => {
    let cause = 'OOM command not allowed';
    const store: RateLimitStore = {
      name: 'flaky',
      consume: () => Promise.reject(new Error(cause)),
      reset: () => Promise.resolve(),
      refund: () => Promise.resolve(),
    };
    const lines: [string, Record<string, unknown>][] = [];
    const log = {
      warn() {},
      line: (_level: string, message: string, fields: Record<string, unknown>) => lines.push([message, fields]),
    };
    const server = createDecisionServer({ rules, store, grpcPort: 0, httpPort: 0, host: '127.0.0.1', log });
    const { httpPort } = await server.listen();
    const decide = () => fetch(`http://127.0.0.1:${httpPort}/json`, { method: 'POST', body: JSON.stringify(entry) });
    try {
      for (const next of [
        'OOM command not allowed',
        'READONLY replica',
        'OOM command not allowed',
        // One error, its figures aside: a stalled Redis's took every place in the log.
        'no reply to a call sent 154 ms ago',
        'READONLY replica',
        'no reply to a call sent 216 ms ago',
      ]) {
        cause = next;
        const answer = await decide();
        const { message } = (await answer.json()) as { message: string };
        expect([answer.status, message]).toEqual([503, 'the rate-limit store failed; the service logged why']);
      }
      for (let n = 0; n < 12; n++) {
        cause = `error ${'abcdefghijkl'[n]}`;
        await decide();
      }
      const errors = lines.flatMap(([message, fields]) =>
        /^(store|further)/.test(message)
          ? [`${message}: ${String(fields.error ?? '').replace(/^.*could not decide: /, '')}`]
          : [],
      );
      expect(errors).toEqual([
        'store unavailable; not serving: OOM command not allowed',
        'store call failed: READONLY replica',
        'store call failed: no reply to a call sent 154 ms ago',
        ...Array.from('abcdefg', (letter) => `store call failed: error ${letter}`),
        'further store errors not logged until the store answers again: ',
      ]);
    } finally {
      await server.close();
    }
  });

  it('refuses only when every quota_mode rule refuses, as the adapters decide', async () => {
    const quota = parseRules(`
domain: d
descriptors:
  - key: a
    quota_mode: true
    policies: [{ name: quota-a, limit: 1, window: 1m, algorithm: fixed-window }]
  - key: b
    quota_mode: true
    policies: [{ name: quota-b, limit: 2, window: 1m, algorithm: fixed-window }]
`);
    const server = createDecisionServer({ rules: quota, grpcPort: 0, httpPort: 0, host: '127.0.0.1', log: quietLog });
    const { httpPort } = await server.listen();
    try {
      const body = JSON.stringify({
        domain: 'd',
        descriptors: [{ entries: [{ key: 'a', value: 'x' }] }, { entries: [{ key: 'b', value: 'x' }] }],
      });
      const ask = async () => (await fetch(`http://127.0.0.1:${httpPort}/json`, { method: 'POST', body })).status;
      expect(await ask()).toBe(200);
      // quota-a is spent, quota-b is not: the request passes.
      expect(await ask()).toBe(200);
      // Now both refuse.
      expect(await ask()).toBe(429);
    } finally {
      await server.close();
    }
  });
});

describe('createServiceClient', () => {
  it.each([
    [{ domain: 'd' }, '`address`'],
    [{ address: '127.0.0.1:1' }, '`domain`'],
    [{ address: '127.0.0.1:1', domain: 'd', deadlineMs: 0 }, '`deadlineMs`'],
  ])('refuses %o at construction', (options, mention) => {
    expect(() => createServiceClient(options as never)).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_SERVER_OPTION' }),
    );
    expect(() => createServiceClient(options as never)).toThrow(mention);
  });

  it('rejects reset and refund, which the protocol lacks', async () => {
    const client = createServiceClient({ address: '127.0.0.1:1', domain: 'd' });
    await expect(client.reset('n', 'k', [])).rejects.toMatchObject({ code: 'ERR_SLUICE_UNSUPPORTED' });
    client.close();
  });

  // Through a limiter the rejection counted as a store outage: under the default 'allow' the
  // reset resolved having done nothing, and a warning said the service was down.
  it('a limiter on it rejects reset and refund too, whatever its fail policy, and reports no outage', async () => {
    const client = createServiceClient({ address: '127.0.0.1:1', domain: 'd' });
    const warnings: string[] = [];
    const limiter = createLimiter({
      limit: 5,
      window: '1h',
      store: client,
      onStoreError: 'allow',
      logger: { warn: (message) => warnings.push(message) },
    });
    await expect(limiter.reset('k')).rejects.toMatchObject({ code: 'ERR_SLUICE_UNSUPPORTED' });
    await expect(limiter.refund('k', 1)).rejects.toMatchObject({ code: 'ERR_SLUICE_UNSUPPORTED' });
    expect(warnings).toEqual([]);
    client.close();
  });

  // The throttle raised the capacity in the limiter, which the service never sees: it had no
  // effect, and nothing said so.
  it.each(['soft', 'elastic'] as const)('refuses a limiter with a %s throttle at creation', (mode) => {
    const client = createServiceClient({ address: '127.0.0.1:1', domain: 'd' });
    const throttle = mode === 'soft' ? { mode, overagePercent: 20 } : { mode, maxOveragePercent: 20 };
    expect(() => createLimiter({ limit: 5, window: '1h', store: client, throttle })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_CONFLICTING_OPTIONS', message: expect.stringContaining('rules') }),
    );
    expect(createLimiter({ limit: 5, window: '1h', store: client, throttle: { mode: 'shadow' } })).toBeDefined();
    client.close();
  });

  // Envoy's hits_addend is a uint32: a cost of 2^32 + 1 went out as 1, and passed.
  it('refuses a cost beyond the wire’s uint32 as one that can never pass, without a call', async () => {
    const client = createServiceClient({ address: '127.0.0.1:1', domain: 'd' });
    const limiter = createLimiter({ limit: 5, window: '1h', store: client, onStoreError: 'allow', logger: quietLog });
    const decision = await limiter.consume('k', { cost: 2 ** 32 + 1 });
    expect(decision).toMatchObject({ allowed: false, reason: 'cost-exceeds-limit' });
    client.close();
  });
});
