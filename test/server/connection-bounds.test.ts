import { type ClientHttp2Session, connect as connectHttp2 } from 'node:http2';
import { connect, type Socket } from 'node:net';
import { type Client, credentials, loadPackageDefinition, type ServiceError, status } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { parseRules } from '@sluice/rules';
import { createDecisionServer, type DecisionServer } from '@sluice/server';
import { protoPath as healthProto } from 'grpc-health-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnvoyClient } from '../helpers/envoy-client.js';

const rules = parseRules(`
domain: d
descriptors:
  - key: k
    rate_limit: { unit: hour, requests_per_unit: 1000 }
`);
const log = { line() {}, warn() {} };
const REQUEST_TIMEOUT_MS = 300;
const IDLE_TIMEOUT_MS = 400;
const METHOD = '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit';
const entry = { domain: 'd', descriptors: [{ entries: [{ key: 'k', value: 'v' }] }] };

let server: DecisionServer;
let grpcPort: number;
let httpPort: number;

beforeAll(async () => {
  server = createDecisionServer({
    rules,
    grpcPort: 0,
    httpPort: 0,
    host: '127.0.0.1',
    log,
    requestTimeoutMs: REQUEST_TIMEOUT_MS,
    grpcIdleTimeoutMs: IDLE_TIMEOUT_MS,
  });
  ({ grpcPort, httpPort } = await server.listen());
});
afterAll(() => server?.close());

/** Resolves once `socket` is closed, with how long that took from now. */
const closedAfter = (socket: Socket): Promise<number> => {
  const start = performance.now();
  // Reading lets the server's FIN end the socket: a socket nobody reads never sees it.
  socket.resume();
  socket.on('error', () => {});
  return new Promise((resolve) => socket.once('close', () => resolve(performance.now() - start)));
};

/** A gRPC frame head announcing a message of `size` bytes. */
const frameHead = (size: number): Buffer => {
  const head = Buffer.alloc(5);
  head.writeUInt32BE(size, 1);
  return head;
};

describe('a gRPC call whose request stops part-way', () => {
  it('is answered DEADLINE_EXCEEDED and reset, freeing its stream (it was held until the client left)', async () => {
    const session: ClientHttp2Session = connectHttp2(`http://127.0.0.1:${grpcPort}`);
    try {
      const settings = new Promise<number | undefined>((resolve) =>
        session.once('remoteSettings', (s) => resolve(s.maxConcurrentStreams)),
      );
      // More calls than a connection may have open: the last wait for a free stream.
      const calls = Array.from({ length: 300 }, () => {
        const stream = session.request({
          ':method': 'POST',
          ':path': METHOD,
          'content-type': 'application/grpc',
          te: 'trailers',
        });
        stream.on('error', () => {});
        stream.write(Buffer.concat([frameHead(100_000), Buffer.alloc(10_000)]));
        const answer = new Promise<string>((resolve) =>
          stream.once('response', (headers) => resolve(`${headers['grpc-status']} ${headers['grpc-message']}`)),
        );
        const closed = new Promise<number | undefined>((resolve) =>
          stream.once('close', () => resolve(stream.rstCode)),
        );
        return Promise.all([answer, closed]);
      });
      expect(await settings).toBe(256);
      const outcomes = await Promise.all(calls);
      const message = encodeURI(`the request did not arrive within ${REQUEST_TIMEOUT_MS} ms`);
      expect(new Set(outcomes.map(([answer, rstCode]) => `${answer} rst ${rstCode}`))).toEqual(
        new Set([`${status.DEADLINE_EXCEEDED} ${message} rst 0`]),
      );
    } finally {
      session.destroy();
    }
  });

  it('leaves the calls on its connection that arrive whole alone', async () => {
    const envoy = createEnvoyClient(`127.0.0.1:${grpcPort}`);
    try {
      const answers = await Promise.all(Array.from({ length: 20 }, () => envoy.shouldRateLimit(entry)));
      expect(answers.map((a) => a.overall_code)).toEqual(Array(20).fill('OK'));
    } finally {
      envoy.close();
    }
  });
});

describe('request size', () => {
  it('refuses a gRPC request over 1 MiB with RESOURCE_EXHAUSTED, as HTTP answers 413 (gRPC took 4 MiB)', async () => {
    const envoy = createEnvoyClient(`127.0.0.1:${grpcPort}`);
    try {
      const value = 'v'.repeat(1024 * 1024);
      const error = await envoy
        .shouldRateLimit({ domain: 'd', descriptors: [{ entries: [{ key: 'k', value }] }] })
        .catch((e: ServiceError) => e);
      expect((error as ServiceError).code).toBe(status.RESOURCE_EXHAUSTED);
      // Just under the bound, the same call is decided.
      const under = { domain: 'd', descriptors: [{ entries: [{ key: 'k', value: value.slice(100) }] }] };
      expect((await envoy.shouldRateLimit(under)).overall_code).toBe('OK');
    } finally {
      envoy.close();
    }
  });
});

describe('gRPC connections', () => {
  it('closes one with no call open after grpcIdleTimeoutMs, with a GOAWAY first', async () => {
    const session = connectHttp2(`http://127.0.0.1:${grpcPort}`);
    session.on('error', () => {});
    const goaway = new Promise<number>((resolve) => session.once('goaway', resolve));
    const closed = new Promise<void>((resolve) => session.once('close', resolve));
    expect(await goaway).toBe(0);
    await closed;
  });

  it('lets a client whose connection was closed idle call again', async () => {
    const envoy = createEnvoyClient(`127.0.0.1:${grpcPort}`);
    try {
      expect((await envoy.shouldRateLimit(entry)).overall_code).toBe('OK');
      const channel = envoy.client.getChannel();
      // The connection is closed idle: the channel goes back to IDLE, and reconnects to call.
      await new Promise<void>((resolve) => {
        const watch = (): void => {
          const state = channel.getConnectivityState(false);
          if (state === 0) resolve();
          else channel.watchConnectivityState(state, Date.now() + 5_000, watch);
        };
        watch();
      });
      expect((await envoy.shouldRateLimit(entry)).overall_code).toBe('OK');
    } finally {
      envoy.close();
    }
  });

  it.each([
    ['sends nothing', ''],
    ['stalls in the HTTP/2 preface', 'PRI * HTTP/2.0\r\n'],
  ])('cuts one that %s and ignores the FIN (it was held as long as its client liked)', async (_, bytes) => {
    // grpc-js ends such a connection once idle, but its socket stays open for as long as the
    // client keeps its own side open, as this one does.
    const socket = connect({ port: grpcPort, host: '127.0.0.1', allowHalfOpen: true }, () => socket.write(bytes));
    const opened = performance.now();
    socket.resume();
    await new Promise((resolve) => socket.once('end', resolve));
    // Silent since it connected, or since its last byte: cut at the second check of two idle
    // periods at the latest. A byte sent past it is answered with a reset.
    const cut = opened + 2 * (2 * IDLE_TIMEOUT_MS) + 200;
    await new Promise((resolve) => setTimeout(resolve, cut - performance.now()));
    // The first byte past it draws the reset; the next write fails on it.
    const reset = new Promise<string>((resolve) =>
      socket.once('error', (error: NodeJS.ErrnoException) => resolve(`${error.code}`)),
    );
    const probe = setInterval(() => socket.write('x'), 50);
    try {
      expect(await reset).toMatch(/^(ECONNRESET|EPIPE)$/);
    } finally {
      clearInterval(probe);
    }
    socket.destroy();
  });

  it('keeps one open as long as a health Watch on it, which sends nothing after its request', async () => {
    const api = loadPackageDefinition(loadSync(healthProto, { enums: String })) as unknown as {
      grpc: { health: { v1: { Health: new (a: string, c: unknown) => Client } } };
    };
    const health = new api.grpc.health.v1.Health(`127.0.0.1:${grpcPort}`, credentials.createInsecure());
    try {
      const watch = (health as unknown as { Watch(r: { service: string }): NodeJS.EventEmitter }).Watch({
        service: '',
      });
      const ended = new Promise<string>((resolve) => {
        watch.on('error', (error: ServiceError) => resolve(`error ${error.code}`));
        watch.on('end', () => resolve('end'));
      });
      const first = new Promise((resolve) => watch.once('data', resolve));
      await first;
      // Past the latest cut of a silent connection (1.6 s here, without the service's pings).
      const outcome = await Promise.race([
        ended,
        new Promise<string>((resolve) => setTimeout(resolve, 6 * IDLE_TIMEOUT_MS, 'still open')),
      ]);
      expect(outcome).toBe('still open');
      (watch as unknown as { cancel(): void }).cancel();
    } finally {
      health.close();
    }
  });
});

describe('HTTP connections', () => {
  it('answer 408 to a request body still arriving after requestTimeoutMs (Node waited 300 s)', async () => {
    const socket = connect(httpPort, '127.0.0.1', () =>
      socket.write('POST /json HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{'),
    );
    let answer = '';
    socket.on('data', (chunk: Buffer) => {
      answer += chunk.toString();
    });
    const took = await closedAfter(socket);
    expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 408 Request Timeout');
    // Node checks once a second at most here (it checked every 30 s).
    expect(took).toBeLessThan(REQUEST_TIMEOUT_MS + 2_000);
  });

  it('close one that sends no request within requestTimeoutMs', async () => {
    const socket = connect(httpPort, '127.0.0.1');
    expect(await closedAfter(socket)).toBeLessThan(REQUEST_TIMEOUT_MS + 2_000);
  });
});
