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

/**
 * Ends a call whose request has not fully arrived, its message and its half-close, `timeoutMs`
 * after its headers. grpc-js reads a call's message for as long as its client takes, unless
 * the client set a deadline (`grpc-timeout`, as Envoy does): a client that sent part of a
 * message and stopped, or a whole one without ending its side, would hold what was read, up to
 * a message's size per call, for as long as its connection lasts.
 * Must be the first interceptor, so that it is handed grpc-js's own call.
 */
export function requestDeadline(timeoutMs: number): ServerInterceptor {
  return (_method, call) => {
    let timer: NodeJS.Timeout | undefined;
    const stop = (): void => clearTimeout(timer);
    const expire = (): void => {
      call.sendStatus({ code: status.DEADLINE_EXCEEDED, details: `the request did not arrive within ${timeoutMs} ms` });
      // The answer alone leaves the stream open, and grpc-js reading, until the client ends
      // its side. RST_STREAM with NO_ERROR after a complete answer tells the client to stop
      // sending (RFC 9113 §8.1); Node sends it once the answer is written.
      streamOf(call)?.close(constants.NGHTTP2_NO_ERROR);
    };
    const responder = new ResponderBuilder()
      .withStart((next) => {
        timer = setTimeout(expire, timeoutMs);
        // A call left waiting holds no process open: it ends with its connection.
        timer.unref();
        // Whole at its half-close: grpc-js holds a unary call's message, unanswered, until then.
        const listener = new ServerListenerBuilder()
          .withOnReceiveHalfClose((pass) => {
            stop();
            pass();
          })
          .withOnCancel(stop)
          .build();
        next(listener);
      })
      // Answered before its message came (a call with none): nothing is left to wait for.
      .withSendStatus((answer, pass) => {
        stop();
        pass(answer);
      })
      .build();
    return new ServerInterceptingCall(call, responder);
  };
}
