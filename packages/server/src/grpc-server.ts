import { Server, type ServerUnaryCall, type sendUnaryData, status } from '@grpc/grpc-js';
import type { CallHandler, CallOutcome } from './call-handler.js';
import { type ConnectionTimeouts, MAX_CALLS_PER_CONNECTION, MAX_REQUEST_BYTES } from './connection-bounds.js';
import { toGrpcResponse } from './grpc-codec.js';
import { requestDeadline } from './grpc-request-deadline.js';
import { addHealthService } from './health-service.js';
import { rateLimitService } from './proto.js';
import { badRequest, toCall } from './request-checks.js';
import { invalidUtf8Field } from './request-utf8.js';
import { refusedBeforeDecoding } from './request-wire-checks.js';
import type { RateLimitCall } from './wire-types.js';

/** The name `grpc.health.v1` clients (Envoy's gRPC health checks among them) ask about. */
export const RATE_LIMIT_SERVICE_NAME = 'envoy.service.ratelimit.v3.RateLimitService';

const grpcStatus: Record<Exclude<CallOutcome['kind'], 'answer'>, status> = {
  invalid: status.INVALID_ARGUMENT,
  unavailable: status.UNAVAILABLE,
  internal: status.INTERNAL,
  // grpc-js sends nothing on a call already cancelled: this status goes nowhere.
  cancelled: status.CANCELLED,
};

/** A request as decoded, and the bytes it came in: the decoder reads bytes that are not UTF-8 as U+FFFD. */
interface ReceivedRequest {
  readonly message: unknown;
  readonly bytes: Buffer;
  /** Why the bytes were refused before decoding (`refusedBeforeDecoding`). */
  readonly refused?: string;
}

/** grpc-js marks a call `cancelled` once its client cancels it, its deadline passes or its connection closes. */
const cancelled = (call: ServerUnaryCall<ReceivedRequest, unknown>): boolean => call.cancelled;

/** A string that is not UTF-8 makes a bad request (Go's protobuf refuses the message too). */
function toGrpcCall({ message, bytes, refused }: ReceivedRequest): RateLimitCall {
  if (refused !== undefined) badRequest(refused);
  const field = invalidUtf8Field(bytes);
  if (field !== undefined) badRequest(`\`${field}\` is not UTF-8`);
  return toCall(message);
}

/** The gRPC front end: `RateLimitService/ShouldRateLimit` and `grpc.health.v1.Health`. */
export function createGrpcServer(handleCall: CallHandler, timeouts: ConnectionTimeouts) {
  const server = new Server({
    interceptors: [requestDeadline(timeouts.requestTimeoutMs)],
    'grpc.max_receive_message_length': MAX_REQUEST_BYTES,
    'grpc.max_concurrent_streams': MAX_CALLS_PER_CONNECTION,
    'grpc.max_connection_idle_ms': timeouts.grpcIdleTimeoutMs,
    // A ping each idle period, which every HTTP/2 peer answers: a connection held open by a
    // call (a health `Watch`) whose peer is gone is ended when one goes a period unanswered.
    // Not `requestTimeoutMs`: set low for small requests, it would drop every far client.
    'grpc.keepalive_time_ms': timeouts.grpcIdleTimeoutMs,
    'grpc.keepalive_timeout_ms': timeouts.grpcIdleTimeoutMs,
  });
  const health = addHealthService(server, ['', RATE_LIMIT_SERVICE_NAME]);
  const { ShouldRateLimit: method } = rateLimitService();
  const keepingBytes = (bytes: Buffer): ReceivedRequest => {
    const refused = refusedBeforeDecoding(bytes);
    return refused === undefined
      ? { message: method.requestDeserialize(bytes), bytes }
      : { message: undefined, bytes, refused };
  };
  const service = { ShouldRateLimit: { ...method, requestDeserialize: keepingBytes } };
  server.addService(service, {
    ShouldRateLimit(call: ServerUnaryCall<ReceivedRequest, unknown>, callback: sendUnaryData<unknown>) {
      handleCall('grpc', () => toGrpcCall(call.request), call, cancelled).then(
        (outcome) => {
          if (outcome.kind === 'answer') callback(null, toGrpcResponse(outcome.answer));
          else callback({ code: grpcStatus[outcome.kind], details: outcome.message });
        },
        // The handler answers every failure of a decision; one of its own (a log sink that
        // throws) must still answer the call, never leave it to its deadline.
        () => callback({ code: status.INTERNAL, details: 'the call could not be decided' }),
      );
    },
  });
  return { server, setServing: health.setServing, endWatches: health.endWatches };
}
