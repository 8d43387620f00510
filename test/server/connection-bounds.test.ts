import { readFileSync } from 'node:fs';
import { type ClientHttp2Session, connect as connectHttp2, constants } from 'node:http2';
import { connect, createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { type ConnectionOptions, connect as connectTls } from 'node:tls';
import { fileURLToPath } from 'node:url';
import {
  type Client,
  credentials,
  loadPackageDefinition,
  ServerCredentials,
  type ServiceError,
  status,
} from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { parseRules } from '@sluice/rules';
import { createDecisionServer, type DecisionServer, type DecisionServerOptions } from '@sluice/server';
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
    // At most a quarter of it, as a call may ask the memory store three times.
    storeTimeoutMs: 50,
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

/** The HTTP/2 preface and an empty SETTINGS frame: a client's first bytes. */
const HTTP2_START = 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00';
const TLS_FIXTURES = fileURLToPath(new URL('./fixtures/tls/', import.meta.url));

/** A `ShouldRateLimit` call on `session`, its request left for the test to write. */
const openCall = (session: ClientHttp2Session) => {
  const stream = session.request({
    ':method': 'POST',
    ':path': METHOD,
    'content-type': 'application/grpc',
    te: 'trailers',
  });
  stream.on('error', () => {});
  return stream;
};

/** A gRPC frame head announcing a message of `size` bytes. */
const frameHead = (size: number): Buffer => {
  const head = Buffer.alloc(5);
  head.writeUInt32BE(size, 1);
  return head;
};

const healthClient = (address: string): Client => {
  const api = loadPackageDefinition(loadSync(healthProto, { enums: String })) as unknown as {
    grpc: { health: { v1: { Health: new (a: string, c: unknown) => Client } } };
  };
  return new api.grpc.health.v1.Health(address, credentials.createInsecure());
};

/** A health `Watch` of the service: its first status, how it ended, and a way to end it. */
const watchHealth = (address: string) => {
  const health = healthClient(address);
  const watch = (health as unknown as { Watch(r: { service: string }): NodeJS.EventEmitter }).Watch({ service: '' });
  const ended = new Promise<string>((resolve) => {
    watch.on('error', (error: ServiceError) => resolve(`error ${error.code}`));
    watch.on('end', () => resolve('end'));
  });
  return {
    first: new Promise((resolve) => watch.once('data', resolve)),
    ended,
    close: () => {
      (watch as unknown as { cancel(): void }).cancel();
      health.close();
    },
  };
};

/**
 * A TCP proxy to `port` that passes every HTTP/2 frame but the client's answers to pings
 * (PING with ACK): a client whose peer process is gone, as the service sees it.
 */
async function dropPingAnswers(port: number) {
  const sockets = new Set<Socket>();
  const proxy = createServer((client) => {
    const upstream = connect(port, '127.0.0.1');
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => {});
      socket.on('close', () => sockets.delete(socket));
    }
    upstream.pipe(client);
    let pending = Buffer.alloc(0);
    let prefaceLeft = 24;
    client.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      if (prefaceLeft > 0) {
        const preface = pending.subarray(0, prefaceLeft);
        upstream.write(preface);
        prefaceLeft -= preface.length;
        pending = pending.subarray(preface.length);
      }
      while (pending.length >= 9 && pending.length >= 9 + pending.readUIntBE(0, 3)) {
        const frame = pending.subarray(0, 9 + pending.readUIntBE(0, 3));
        pending = pending.subarray(frame.length);
        const pingAnswer = frame[3] === 0x6 && ((frame[4] as number) & 0x1) === 1;
        if (!pingAnswer) upstream.write(frame);
      }
    });
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  return {
    port: (proxy.address() as { port: number }).port,
    close: () => {
      proxy.close();
      for (const socket of sockets) socket.destroy();
    },
  };
}

describe('a gRPC call whose request stops part-way', () => {
  it('is answered DEADLINE_EXCEEDED and reset, freeing its stream (it was held until the client left)', async () => {
    const session: ClientHttp2Session = connectHttp2(`http://127.0.0.1:${grpcPort}`);
    try {
      const settings = new Promise<number | undefined>((resolve) =>
        session.once('remoteSettings', (s) => resolve(s.maxConcurrentStreams)),
      );
      // More calls than a connection may have open: the last wait for a free stream.
      const calls = Array.from({ length: 300 }, () => {
        const stream = openCall(session);
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

  it('is answered DEADLINE_EXCEEDED when its message came whole but its client never ended its side', async () => {
    // grpc-js answers a unary call once its client half-closes: until then it held the message.
    const session: ClientHttp2Session = connectHttp2(`http://127.0.0.1:${grpcPort}`);
    try {
      session.on('error', () => {});
      const stream = openCall(session);
      stream.write(Buffer.concat([frameHead(100_000), Buffer.alloc(100_000)]));
      const answer = await new Promise<unknown>((resolve) => stream.once('response', (h) => resolve(h['grpc-status'])));
      expect(answer).toBe(String(status.DEADLINE_EXCEEDED));
      await new Promise((resolve) => stream.once('close', resolve));
    } finally {
      session.destroy();
    }
  });

  it('is reset when its client lets none of the answer out (it held the call and its request for good)', async () => {
    // A flow-control window of 0: the answer's headers go, its message never can.
    const session = connectHttp2(`http://127.0.0.1:${grpcPort}`, { settings: { initialWindowSize: 0 } });
    try {
      session.on('error', () => {});
      const stream = openCall(session);
      // domain "d", one descriptor with the entry k=v: a call the rules decide.
      const request = Buffer.from('0a016412080a060a016b120176', 'hex');
      stream.end(Buffer.concat([frameHead(request.length), request]));
      const started = performance.now();
      // Decided: its answer's headers, with the status still to come after the message.
      const headers = await new Promise<Record<string, unknown>>((resolve) => stream.once('response', resolve));
      expect(headers[':status']).toBe(200);
      expect(headers['grpc-status']).toBeUndefined();
      const rstCode = await new Promise<number | undefined>((resolve) =>
        stream.once('close', () => resolve(stream.rstCode)),
      );
      expect(rstCode).toBe(constants.NGHTTP2_CANCEL);
      expect(performance.now() - started).toBeLessThan(REQUEST_TIMEOUT_MS + 1_000);
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
    ['began HTTP/2', HTTP2_START],
  ])(
    'cuts one that %s, once ended idle, though its client keeps it open and sends bytes (it was held for good)',
    async (_, bytes) => {
      // grpc-js ends such a connection once idle and leaves its socket to the client to close.
      const socket = connect({ port: grpcPort, host: '127.0.0.1', allowHalfOpen: true }, () =>
        socket.write(Buffer.from(bytes, 'latin1')),
      );
      const opened = performance.now();
      socket.resume();
      await new Promise((resolve) => socket.once('end', resolve));
      // A byte now and then, read and thrown away: once the socket is cut, one draws a reset.
      const reset = new Promise<string>((resolve) =>
        socket.once('error', (error: NodeJS.ErrnoException) => resolve(`${error.code}`)),
      );
      const trickle = setInterval(() => socket.write('x'), 50);
      try {
        expect(await reset).toMatch(/^(ECONNRESET|EPIPE)$/);
        // Ended at an idle period, then nothing written for two, checked once a period.
        expect(performance.now() - opened).toBeLessThan(4 * IDLE_TIMEOUT_MS + 1_000);
      } finally {
        clearInterval(trickle);
        socket.destroy();
      }
    },
  );

  it('keeps one open as long as a health Watch on it, which sends nothing after its request', async () => {
    const watching = watchHealth(`127.0.0.1:${grpcPort}`);
    try {
      await watching.first;
      // Six idle periods, a ping in each: a connection with a call open is not idle.
      const outcome = await Promise.race([
        watching.ended,
        new Promise<string>((resolve) => setTimeout(resolve, 6 * IDLE_TIMEOUT_MS, 'still open')),
      ]);
      expect(outcome).toBe('still open');
    } finally {
      watching.close();
    }
  });

  it("ends one whose client does not answer the service's ping, a Watch open on it", async () => {
    const proxy = await dropPingAnswers(grpcPort);
    const watching = watchHealth(`127.0.0.1:${proxy.port}`);
    try {
      await watching.first;
      // A ping after an idle period, unanswered for requestTimeoutMs.
      expect(await watching.ended).toBe(`error ${status.UNAVAILABLE}`);
    } finally {
      watching.close();
      proxy.close();
    }
  });

  it.each(['Watch', 'Check'])(
    'refuses a health %s of a name over 256 characters, which a Watch held',
    async (method) => {
      const health = healthClient(`127.0.0.1:${grpcPort}`);
      try {
        const call = (health as unknown as Record<string, (...args: unknown[]) => NodeJS.EventEmitter>)[method];
        const code = await new Promise<number>((resolve) => {
          const request = { service: 's'.repeat(257) };
          if (method === 'Check')
            call?.call(health, request, (error: ServiceError | null) => resolve(error?.code ?? 0));
          else call?.call(health, request).on('error', (error: ServiceError) => resolve(error.code));
        });
        expect(code).toBe(status.INVALID_ARGUMENT);
      } finally {
        health.close();
      }
    },
  );
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

/** A server of the test's own (one it closes, or serves over TLS), whose requests have time to arrive. */
const ownServer = (options: Partial<DecisionServerOptions> = {}): DecisionServer =>
  createDecisionServer({
    rules,
    grpcPort: 0,
    httpPort: 0,
    host: '127.0.0.1',
    log,
    requestTimeoutMs: 60_000,
    grpcIdleTimeoutMs: IDLE_TIMEOUT_MS,
    ...options,
  });

describe('a gRPC connection over TLS', () => {
  it('is cut once ended idle, though its client keeps it open (the TLS socket hid the end: held for good)', async () => {
    const pem = (name: string) => readFileSync(join(TLS_FIXTURES, name));
    const own = ownServer({
      grpcCredentials: ServerCredentials.createSsl(null, [
        { private_key: pem('server-key.pem'), cert_chain: pem('server.pem') },
      ]),
    });
    const ports = await own.listen();
    try {
      // Past the handshake and into HTTP/2 (the preface and an empty SETTINGS frame), then
      // nothing: it keeps its side open after the service's GOAWAY and FIN.
      const options = { port: ports.grpcPort, host: '127.0.0.1', ca: pem('ca.pem'), ALPNProtocols: ['h2'] };
      const socket = connectTls({ ...options, allowHalfOpen: true } as ConnectionOptions, () =>
        socket.write(Buffer.from(HTTP2_START, 'latin1')),
      );
      socket.resume();
      socket.on('error', () => {});
      const opened = performance.now();
      await new Promise((resolve) => socket.once('end', resolve));
      // Ended at an idle period; nothing written for two more, checked once a period.
      await new Promise((resolve) => setTimeout(resolve, opened + 4 * IDLE_TIMEOUT_MS + 300 - performance.now()));
      const closed = new Promise((resolve) => socket.once('close', resolve));
      const probe = setInterval(() => socket.write('x'), 50);
      try {
        await closed;
      } finally {
        clearInterval(probe);
      }
    } finally {
      await own.close();
    }
  });
});

describe('close()', () => {
  // Node counts a connection no request has come on neither idle nor busy: one a client opened
  // ahead of need held the close for the whole shutdown bound (10 s), the gRPC port's own closing
  // at once. A request whose head has arrived is still answered.
  it('closes an HTTP connection no request has come on at once, and answers one whose request has', async () => {
    const own = ownServer();
    const ports = await own.listen();
    const open = (write?: string) => {
      const socket = connect({ port: ports.httpPort, host: '127.0.0.1' }, () => write && socket.write(write));
      socket.on('error', () => {});
      return socket;
    };
    const silent = open();
    const answered = open(
      'POST /json HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{',
    );
    let reply = '';
    answered.on('data', (chunk) => {
      reply += chunk;
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    const silentClosed = new Promise((resolve) => silent.once('close', resolve));
    const closing = own.close();
    await silentClosed;
    // The request under way is not cut: its body ends, and it gets its answer.
    const answeredClosed = new Promise((resolve) => answered.once('close', resolve));
    answered.end(`"domain":"d","descriptors":[]}${' '.repeat(200 - 31)}`);
    await Promise.all([closing, answeredClosed]);
    expect(reply).toMatch(/^HTTP\/1\.1 \d{3} /);
  });

  it('cuts a socket whose session had ended but whose client kept it open (close() left it, and the process, running)', async () => {
    const own = ownServer();
    const ports = await own.listen();
    const socket = connect({ port: ports.grpcPort, host: '127.0.0.1', allowHalfOpen: true }, () =>
      socket.write('PRI * HTTP/2.0\r\n'),
    );
    socket.resume();
    socket.on('error', () => {});
    // Ended idle; left open for two more idle periods at least, were it not for close().
    await new Promise((resolve) => socket.once('end', resolve));
    const closing = performance.now();
    await own.close();
    const probe = setInterval(() => socket.write('x'), 20);
    try {
      await new Promise((resolve) => socket.once('close', resolve));
      expect(performance.now() - closing).toBeLessThan(IDLE_TIMEOUT_MS);
    } finally {
      clearInterval(probe);
    }
  });
});
