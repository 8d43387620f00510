import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { messageOf } from '@sluice/core';
import type { CallHandler, CallOutcome } from './call-handler.js';
import { type ConnectionTimeouts, MAX_REQUEST_BYTES } from './connection-bounds.js';
import { parseJsonCall, toJsonResponse } from './json-codec.js';
import type { ServiceLog } from './log.js';

const httpStatus: Record<Exclude<CallOutcome['kind'], 'answer' | 'cancelled'>, number> = {
  invalid: 400,
  unavailable: 503,
  internal: 500,
};

/**
 * The connection can no longer carry the answer: the client reset it, or it broke. A client
 * that only half-closed it (sent FIN after its request) is still there to read the answer.
 */
const gone = (req: IncomingMessage): boolean => !req.socket.writable;

/** The body's bytes, left undecoded: the JSON reader refuses bytes that are not UTF-8. */
function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_REQUEST_BYTES) {
        chunks.push(chunk);
        return;
      }
      // Answer at once and read the rest into the void: a reset socket would lose the answer.
      req.removeAllListeners('data');
      req.resume();
      resolve(undefined);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** What `/metrics` serves. */
export interface MetricsText {
  readonly contentType: string;
  render(): Promise<string>;
}

/**
 * The HTTP front end, on envoyproxy/ratelimit's paths: `POST /json` (200 or 429 with the
 * `RateLimitResponse` in proto3 JSON), `GET /healthcheck`, `GET /metrics`, and `GET /rlconfig`
 * (the rules served, as `rulesListing` writes them).
 */
export function createHttpServer(
  handleCall: CallHandler,
  metrics: MetricsText,
  rulesListing: () => string,
  serving: () => boolean,
  closing: () => boolean,
  { requestTimeoutMs, log }: Pick<ConnectionTimeouts, 'requestTimeoutMs'> & { log: ServiceLog },
) {
  // Once `close()` has begun, every answer, to the calls in flight too, closes its connection:
  // a kept-alive client cannot hold the close up until its connection times out.
  // So does an answer to a client that half-closed its connection: Node closes it once the
  // answer is written, and the answer says so.
  const send = (res: ServerResponse, code: number, type: string, body: string): void => {
    if (closing() || res.socket?.readableEnded) res.setHeader('Connection', 'close');
    res.writeHead(code, { 'Content-Type': type, 'Content-Length': Buffer.byteLength(body) }).end(body);
  };
  const sendJson = (res: ServerResponse, code: number, body: unknown): void =>
    send(res, code, 'application/json', JSON.stringify(body));

  const json = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const body = await readBody(req);
    if (body === undefined) {
      res.setHeader('Connection', 'close');
      return sendJson(res, 413, { code: 'PAYLOAD_TOO_LARGE', message: 'body over 1 MiB' });
    }
    const outcome = await handleCall('http', () => parseJsonCall(body), req, gone);
    if (outcome.kind === 'cancelled') return;
    if (outcome.kind === 'answer') {
      return sendJson(res, outcome.answer.overallCode === 'OK' ? 200 : 429, toJsonResponse(outcome.answer));
    }
    sendJson(res, httpStatus[outcome.kind], { code: outcome.kind.toUpperCase(), message: outcome.message });
  };

  const healthcheck = (_: IncomingMessage, res: ServerResponse): void =>
    serving() ? send(res, 200, 'text/plain', 'OK') : send(res, 503, 'text/plain', 'NOT_SERVING');
  const routes: Record<string, (req: IncomingMessage, res: ServerResponse) => Promise<void> | void> = {
    'POST /json': json,
    'GET /healthcheck': healthcheck,
    'GET /metrics': async (_, res) => send(res, 200, metrics.contentType, await metrics.render()),
    'GET /rlconfig': (_, res) => send(res, 200, 'text/plain; charset=utf-8', rulesListing()),
  };

  // Node ends a request still arriving after `requestTimeout` with 408, checking every
  // `connectionsCheckingInterval` (30 s by default, which would let a 10 s bound run to 40 s).
  const bounds = {
    requestTimeout: requestTimeoutMs,
    headersTimeout: requestTimeoutMs,
    connectionsCheckingInterval: Math.min(1000, requestTimeoutMs),
  };
  const server = createServer(bounds, (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    // HEAD is GET without the body (RFC 9110), which Node leaves out for a HEAD request.
    const route = routes[`${req.method === 'HEAD' ? 'GET' : req.method} ${path}`];
    // Once `close()` has begun, a call on a connection kept alive is refused; a health check
    // still gets the health check's own answer, which a load balancer's probe parses.
    if (closing() && route !== healthcheck) {
      return sendJson(res, 503, { code: 'UNAVAILABLE', message: 'the service is shutting down' });
    }
    if (route === undefined) {
      const allowed = Object.keys(routes)
        .filter((r) => r.endsWith(` ${path}`))
        .flatMap((r) => (r.startsWith('GET ') ? ['GET', 'HEAD'] : [r.split(' ')[0] as string]));
      if (allowed.length === 0) return sendJson(res, 404, { code: 'NOT_FOUND', message: path });
      // A 405 names the methods the path takes (RFC 9110 §15.5.6).
      res.setHeader('Allow', allowed.join(', '));
      return sendJson(res, 405, { code: 'METHOD_NOT_ALLOWED', message: path });
    }
    // A failure past the call handler's own (a log sink that throws, /metrics failing): the
    // caller is told no more than that, as for the handler's (its message may name the
    // service's files or state); the log has it, when the log itself works.
    Promise.resolve(route(req, res)).catch((error: unknown) => {
      try {
        log.line('error', 'HTTP request failed', {
          path,
          error: messageOf(error),
        });
      } catch {
        // The log failing too: the answer below still goes out.
      }
      if (!res.headersSent) sendJson(res, 500, { code: 'INTERNAL', message: 'the request could not be answered' });
      else res.destroy();
    });
  });
  // Connections no request has come on yet: Node counts them neither idle nor busy, so at
  // shutdown one a client opened ahead of need (a proxy's preconnect, a lingering port check)
  // held the close for the whole shutdown bound. They are closed at once, as the gRPC port
  // closes its own; a request whose head has arrived is finished.
  const unused = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    unused.add(socket);
    socket.once('close', () => unused.delete(socket));
  });
  server.on('request', (req: IncomingMessage) => unused.delete(req.socket));
  const closeUnusedConnections = (): void => {
    for (const socket of unused) socket.destroy();
  };
  // Node's HTTP server ends a connection whose client sends FIN, though that client may only
  // have half-closed it after its request (`nc -N`, `shutdown(SHUT_WR)`) and wait for the
  // answer, which envoyproxy/ratelimit's Go server sends. With this flag (Node has no
  // constructor option for it) Node writes the answer to such a client, then closes.
  return Object.assign(server, { httpAllowHalfOpen: true, closeUnusedConnections });
}
