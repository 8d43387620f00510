import { connect } from 'node:net';
import { type CallOptions, type ClientUnaryCall, type ServiceError, status } from '@grpc/grpc-js';
import { createMemoryStore, type RateLimitStore } from '@sluice/core';
import { parseRules } from '@sluice/rules';
import { createDecisionServer, type DecisionServer } from '@sluice/server';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createCallHandler } from '../../packages/server/src/call-handler.js';
import { parseServeArgs } from '../../packages/server/src/cli-args.js';
import type { Decided } from '../../packages/server/src/decider.js';
import { createServiceMetrics } from '../../packages/server/src/metrics.js';
import type { RateLimitCall } from '../../packages/server/src/wire-types.js';
import { manualClock } from '../helpers/clock.js';
import { createEnvoyClient, type OfficialRequest, type OfficialResponse } from '../helpers/envoy-client.js';
import { waitFor } from '../helpers/redis-server.js';

const rules = parseRules(`
domain: d
descriptors:
  - key: k
    rate_limit: { unit: hour, requests_per_unit: 5 }
  - key: j
    rate_limit: { unit: hour, requests_per_unit: 10 }
  - key: z
    rate_limit: { unit: hour, requests_per_unit: 1 }
`);
const quietLog = { line() {}, warn() {} };
const entry = (key: string, value = 'v') => ({ entries: [{ key, value }] });

/**
 * The memory store, its decisions taken the promise path (as a remote store's are) and, while
 * held, kept waiting until the test lets them go: the seam where a call is cancelled after the
 * service asked the store, before the store answered.
 */
function holdingStore() {
  const { consumeSync, consumeOneSync, ...memory } = createMemoryStore();
  let gate: Promise<void> = Promise.resolve();
  let open = () => {};
  let asked = 0;
  const waiting: { count: number; resolve: () => void }[] = [];
  const store: RateLimitStore = {
    ...memory,
    async consume(request) {
      asked++;
      for (const w of waiting) if (asked >= w.count) w.resolve();
      await gate;
      return memory.consume(request);
    },
  };
  return {
    store,
    hold() {
      gate = new Promise((resolve) => {
        open = resolve;
      });
    },
    release: () => open(),
    /** Resolves once the store has been asked `count` times in all. */
    asked: (count: number) =>
      new Promise<void>((resolve) => (asked >= count ? resolve() : waiting.push({ count, resolve }))),
  };
}

type RawShouldRateLimit = (
  request: OfficialRequest,
  options: CallOptions,
  callback: (error: ServiceError | null, response?: OfficialResponse) => void,
) => ClientUnaryCall;

let server: DecisionServer;
let held: ReturnType<typeof holdingStore>;
let envoy: ReturnType<typeof createEnvoyClient>;
let httpBase: string;
let httpPort: number;

async function startServer(failureModeDeny: boolean) {
  held = holdingStore();
  server = createDecisionServer({
    failureModeDeny,
    rules,
    store: held.store,
    // The window never turns during a test; the store's wait is the test's, not a timeout's.
    clock: manualClock(),
    storeTimeoutMs: 300_000,
    requestTimeoutMs: 1_200_000,
    grpcPort: 0,
    httpPort: 0,
    host: '127.0.0.1',
    log: quietLog,
  });
  const ports = await server.listen();
  httpPort = ports.httpPort;
  httpBase = `http://127.0.0.1:${httpPort}`;
  envoy = createEnvoyClient(`127.0.0.1:${ports.grpcPort}`);
}
afterEach(async () => {
  held.release();
  envoy.close();
  await server.close();
});

/** A `ShouldRateLimit` call the test can cancel; `settled` gives its status code or answer. */
function startCall(request: OfficialRequest, options: CallOptions = {}) {
  const raw = (envoy.client as unknown as { ShouldRateLimit: RawShouldRateLimit }).ShouldRateLimit.bind(envoy.client);
  let call: ClientUnaryCall | undefined;
  const settled = new Promise<status | OfficialResponse>((resolve) => {
    call = raw(request, options, (error, response) => resolve(error ? error.code : (response as OfficialResponse)));
  });
  return { call: call as ClientUnaryCall, settled };
}

/**
 * Resolves once the service has seen the client's cancel. A call in a domain the rules do not
 * know is answered without the store; sent on the same channel, its frames follow the
 * cancel's RST_STREAM on the same HTTP/2 connection, so by its answer the cancel has been read.
 */
const serviceHasSeenIt = () => envoy.shouldRateLimit({ domain: 'unknown', descriptors: [entry('k')] });

const metricsText = async () => (await fetch(`${httpBase}/metrics`)).text();
const figure = (text: string, series: string): number => {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.split(' ').pop());
};
/** Waits for the calls in flight to be done with, their refunds included. */
const noCallInFlight = () =>
  waitFor('no call in flight', async () => figure(await metricsText(), 'sluice_service_calls_in_flight') === 0);
const remaining = async (...keys: string[]) =>
  (await envoy.shouldRateLimit({ domain: 'd', descriptors: keys.map((k) => entry(k)) })).statuses?.map(
    (s) => s.limit_remaining,
  );

/**
 * A `POST /json` on a connection of its own, for the test to end as the case needs; `closed`
 * gives every byte the service wrote, once the connection is closed.
 */
function jsonOnOwnConnection(request: object) {
  const body = JSON.stringify(request);
  const socket = connect({ port: httpPort, host: '127.0.0.1', allowHalfOpen: true });
  let received = '';
  socket.on('data', (chunk: Buffer) => {
    received += chunk.toString('utf8');
  });
  const closed = new Promise<string>((resolve) => socket.once('close', () => resolve(received)));
  const message = `POST /json HTTP/1.1\r\nHost: x\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  return { socket, message, closed };
}
/** The service reads what a connection sent before it accepts the next one and reads its request. */
const serviceHasReadIt = async () => expect((await fetch(`${httpBase}/healthcheck`)).status).toBe(200);

/**
 * `printf … | nc -N`: a client that sends FIN after its request and waits for the answer. Node
 * ended such a connection at once, so the call went unanswered and counted as cancelled. Gives
 * what the answer says remains.
 */
async function askHalfClosed(): Promise<number | undefined> {
  held.hold();
  const { socket, message, closed } = jsonOnOwnConnection({ domain: 'd', descriptors: [entry('k')], hitsAddend: 2 });
  socket.end(message);
  await held.asked(1);
  await serviceHasReadIt();
  held.release();
  const received = await closed;
  expect(received).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
  // The service closed the connection once it had answered, and the answer said so.
  expect(received).toContain('\r\nConnection: close\r\n');
  const answer = JSON.parse(received.slice(received.indexOf('\r\n\r\n') + 4)) as {
    statuses: { limitRemaining: number }[];
  };
  const text = await metricsText();
  expect(figure(text, 'sluice_service_calls_total{transport="http",result="ok"}')).toBe(1);
  expect(figure(text, 'sluice_service_calls_total{transport="http",result="cancelled"}')).toBe(0);
  return answer.statuses[0]?.limitRemaining;
}

describe('by default (the proxy let the request through: Envoy’s failure_mode_deny false)', () => {
  beforeEach(() => startServer(false));

  // Envoy lets a request through when the service does not answer within its `timeout`: had
  // the charge been given back, a store slower than that timeout would limit nothing.
  it('a gRPC call its client gave up on is charged, and counts as cancelled', async () => {
    held.hold();
    const { call, settled } = startCall({ domain: 'd', descriptors: [entry('k')], hits_addend: 2 });
    await held.asked(1);
    call.cancel();
    expect(await settled).toBe(status.CANCELLED);
    await serviceHasSeenIt();
    held.release();
    await noCallInFlight();
    expect(await remaining('k')).toEqual([2]);
    expect(figure(await metricsText(), 'sluice_service_calls_total{transport="grpc",result="cancelled"}')).toBe(1);
  });

  it('answers a /json client that half-closed its connection after its request, then closes it', async () => {
    expect(await askHalfClosed()).toBe(3);
  });
});

describe('with failureModeDeny, a call its caller gave up on while the store decided it', () => {
  beforeEach(() => startServer(true));

  // The client saw CANCELLED, and its quota was spent all the same.
  it('gives back what a gRPC call charged when its client cancelled it, on every descriptor at its hits_addend', async () => {
    held.hold();
    const { call, settled } = startCall({ domain: 'd', descriptors: [entry('k'), entry('j')], hits_addend: 2 });
    await held.asked(2);
    call.cancel();
    expect(await settled).toBe(status.CANCELLED);
    await serviceHasSeenIt();
    held.release();
    await noCallInFlight();
    // The next call, at cost 1, finds the quota as the cancelled call found it.
    expect(await remaining('k', 'j')).toEqual([4, 9]);
    const text = await metricsText();
    expect(figure(text, 'sluice_service_calls_total{transport="grpc",result="cancelled"}')).toBe(1);
    // The cancelled call is not counted as answered OK; the look and the call above are.
    expect(figure(text, 'sluice_service_calls_total{transport="grpc",result="ok"}')).toBe(2);
  });

  // The client saw DEADLINE_EXCEEDED (Envoy's `timeout`), and its quota was spent all the same.
  it('gives back what a gRPC call charged when its deadline passed', async () => {
    // Connected first, so that the deadline is spent waiting on the store, not connecting.
    await serviceHasSeenIt();
    held.hold();
    // A deadline is wall-clock time in grpc-js, client and server alike: this is the one wait.
    const { settled } = startCall(
      { domain: 'd', descriptors: [entry('k')], hits_addend: 3 },
      { deadline: Date.now() + 300 },
    );
    await held.asked(1);
    expect(await settled).toBe(status.DEADLINE_EXCEEDED);
    await serviceHasSeenIt();
    held.release();
    await noCallInFlight();
    expect(await remaining('k')).toEqual([4]);
    expect(figure(await metricsText(), 'sluice_service_calls_total{transport="grpc",result="cancelled"}')).toBe(1);
  });

  it('gives nothing back twice: a refused call gave its charges back as it was refused', async () => {
    // k has spent 1 and z all it has: a call on both charges k, is refused by z, and gives k back.
    expect(await remaining('k', 'z')).toEqual([4, 0]);
    held.hold();
    const { call, settled } = startCall({ domain: 'd', descriptors: [entry('k'), entry('z')] });
    await held.asked(4);
    call.cancel();
    expect(await settled).toBe(status.CANCELLED);
    await serviceHasSeenIt();
    held.release();
    await noCallInFlight();
    // A second refund would have left k at 4 after this call.
    expect(await remaining('k')).toEqual([3]);
  });

  // The HTTP endpoint: the client reset its connection, and its quota was spent all the same.
  it('gives back what a /json call charged when its client reset the connection', async () => {
    held.hold();
    const { socket, message, closed } = jsonOnOwnConnection({ domain: 'd', descriptors: [entry('k')], hitsAddend: 2 });
    socket.write(message);
    await held.asked(1);
    socket.resetAndDestroy();
    expect(await closed).toBe('');
    await serviceHasReadIt();
    held.release();
    await noCallInFlight();
    const answer = (await (
      await fetch(`${httpBase}/json`, {
        method: 'POST',
        body: JSON.stringify({ domain: 'd', descriptors: [entry('k')] }),
      })
    ).json()) as { statuses: { limitRemaining: number }[] };
    expect(answer.statuses[0]?.limitRemaining).toBe(4);
    const text = await metricsText();
    expect(figure(text, 'sluice_service_calls_total{transport="http",result="cancelled"}')).toBe(1);
    expect(figure(text, 'sluice_service_calls_total{transport="http",result="ok"}')).toBe(1);
  });

  // A FIN after the request is no cancel: the client may be waiting for the answer, and gets it.
  it('answers a /json client that half-closed its connection, and gives nothing back', async () => {
    expect(await askHalfClosed()).toBe(3);
    expect(await remaining('k')).toEqual([2]);
  });
});

describe('the call handler', () => {
  const okAnswer = { answer: { overallCode: 'OK' }, verdicts: [] } as unknown as Decided;
  const gone = (caller: { cancelled: boolean }) => caller.cancelled;
  const parse = () => ({}) as RateLimitCall;

  /** A handler over a decider that counts its calls; `giveBack` waits for `gate` when given. */
  function handlerOf(failureModeDeny: boolean, gate?: Promise<void>) {
    const metrics = createServiceMetrics(undefined);
    const counts = { decided: 0, givenBack: 0 };
    const handler = createCallHandler(
      {
        decide: async () => {
          counts.decided++;
          return okAnswer;
        },
        giveBack: async () => {
          await gate;
          counts.givenBack++;
        },
      },
      metrics,
      quietLog,
      () => {},
      failureModeDeny,
    );
    cleanups.push(() => metrics.close());
    const cancelledCount = async () =>
      figure(await metrics.render(), 'sluice_service_calls_total{transport="grpc",result="cancelled"}');
    return { ...handler, counts, cancelledCount };
  }
  const cleanups: (() => unknown)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  it('with failureModeDeny, does not decide a call its caller left before it was handled', async () => {
    const { handleCall, counts, cancelledCount } = handlerOf(true);
    expect((await handleCall('grpc', parse, { cancelled: true }, gone)).kind).toBe('cancelled');
    expect(counts).toEqual({ decided: 0, givenBack: 0 });
    expect(await cancelledCount()).toBe(1);
  });

  it('by default, decides it (the proxy let its request through) and gives nothing back', async () => {
    const { handleCall, counts, cancelledCount } = handlerOf(false);
    expect((await handleCall('grpc', parse, { cancelled: true }, gone)).kind).toBe('cancelled');
    expect(counts).toEqual({ decided: 1, givenBack: 0 });
    expect(await cancelledCount()).toBe(1);
  });

  // Regression: a call whose caller left holds no stream open, so the servers' shutdown did not
  // wait for it: `close()` resolved, the store was closed, and the refund was lost.
  it('is drained only once a refund under way is done', async () => {
    let open = () => {};
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const { handleCall, drained, counts } = handlerOf(true, gate);
    const caller = { cancelled: false };
    const handled = handleCall('grpc', parse, caller, gone);
    caller.cancelled = true;
    let done = false;
    const draining = drained().then(() => {
      done = true;
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect([done, counts.givenBack]).toEqual([false, 0]);
    open();
    await draining;
    expect(counts.givenBack).toBe(1);
    expect((await handled).kind).toBe('cancelled');
    await drained();
  });
});

describe('sluice serve', () => {
  it('takes --failure-mode-deny as failureModeDeny, off unless given', () => {
    expect(parseServeArgs(['--rules', 'rules.yaml'])).toMatchObject({ failureModeDeny: false });
    expect(parseServeArgs(['--rules', 'rules.yaml', '--failure-mode-deny'])).toMatchObject({ failureModeDeny: true });
    expect(() => parseServeArgs(['--rules', 'rules.yaml', '--failure-mode-deny=yes'])).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_SERVER_OPTION' }),
    );
  });
});
