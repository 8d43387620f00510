import { constants, type Http2Stream } from 'node:http2';
import {
  ResponderBuilder,
  ServerInterceptingCall,
  type ServerInterceptingCallInterface,
  type ServerInterceptor,
  ServerListenerBuilder,
  status,
} from '@grpc/grpc-js';

/**
 * The HTTP/2 stream under grpc-js's own call, which the interceptor at the head of the chain
 * is handed (its `BaseServerInterceptingCall`); the interceptor API does not expose it.
 */
function streamOf(call: ServerInterceptingCallInterface): Http2Stream | undefined {
  const stream = (call as { stream?: Partial<Http2Stream> }).stream;
  return typeof stream?.close === 'function' ? (stream as Http2Stream) : undefined;
}

/** Sweeps a bound takes: a wait is ended between `timeoutMs` and a quarter more. */
const SWEEPS_PER_TIMEOUT = 4;

/**
 * Waits, oldest first, each with the sweep it began at, ended by a sweep once `timeoutMs` has
 * passed: a map entry added and deleted per wait, where a timer per wait is set, cleared and
 * unreferenced.
 */
function createWaits(timeoutMs: number) {
  const begun = new Map<() => void, number>();
  let sweeps = 0;
  let sweeper: NodeJS.Timeout | undefined;
  const sweep = (): void => {
    sweeps++;
    for (const [expire, at] of begun) {
      if (sweeps - at <= SWEEPS_PER_TIMEOUT) break;
      begun.delete(expire);
      expire();
    }
    if (begun.size === 0) {
      clearInterval(sweeper);
      sweeper = undefined;
    }
  };
  return {
    /** Begins (or begins again) the wait that `expire` ends. */
    begin(expire: () => void): void {
      begun.delete(expire);
      begun.set(expire, sweeps);
      if (sweeper !== undefined) return;
      sweeper = setInterval(sweep, Math.max(1, Math.ceil(timeoutMs / SWEEPS_PER_TIMEOUT)));
      // Calls left waiting hold no process open: they end with their connections.
      sweeper.unref();
    },
    end(expire: () => void): void {
      begun.delete(expire);
    },
  };
}

/**
 * Bounds, each to `timeoutMs` (and a quarter more), the two waits on a client that could hold
 * a call, and with it up to a request's size, for as long as its connection lasts. grpc-js
 * waits for neither unless the client set a deadline (`grpc-timeout`, as Envoy does).
 * - The request's arrival, its message and its half-close, from its headers: a client that sent
 *   part of a message, or a whole one without ending its side, is answered DEADLINE_EXCEEDED.
 * - A unary call's answer, from the request's arrival to its status sent: a client that lets no
 *   byte of it out (an HTTP/2 flow-control window of 0) has the stream reset (CANCEL). The
 *   decision comes first, within the store's own timeout. A health `Watch` streams its answers
 *   for as long as it lasts, and is left to its connection.
 * grpc-js tells the end of a call, its status sent or its stream closed, as a cancel. Must be
 * the first interceptor, so that it is handed grpc-js's own call.
 */
export function requestDeadline(timeoutMs: number): ServerInterceptor {
  const waits = createWaits(timeoutMs);
  return (method, call) => {
    const notArrived = (): void => {
      call.sendStatus({ code: status.DEADLINE_EXCEEDED, details: `the request did not arrive within ${timeoutMs} ms` });
      // The answer alone leaves the stream open, and grpc-js reading, until the client ends
      // its side. RST_STREAM with NO_ERROR after a complete answer tells the client to stop
      // sending (RFC 9113 §8.1); Node sends it once the answer is written.
      streamOf(call)?.close(constants.NGHTTP2_NO_ERROR);
    };
    // The answer could not be written: the reset goes at once.
    const notAnswered = (): void => streamOf(call)?.close(constants.NGHTTP2_CANCEL);
    const unary = !method.requestStream && !method.responseStream;
    const responder = new ResponderBuilder()
      .withStart((next) => {
        waits.begin(notArrived);
        // Whole at its half-close: grpc-js holds a unary call's message, unanswered, until then.
        const listener = new ServerListenerBuilder()
          .withOnReceiveHalfClose((pass) => {
            waits.end(notArrived);
            if (unary) waits.begin(notAnswered);
            pass();
          })
          .withOnCancel(() => {
            waits.end(notArrived);
            waits.end(notAnswered);
          })
          .build();
        next(listener);
      })
      .build();
    return new ServerInterceptingCall(call, responder);
  };
}
