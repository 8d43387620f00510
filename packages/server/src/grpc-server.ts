import { Server, type ServerUnaryCall, type sendUnaryData, status } from '@grpc/grpc-js';
import type { CallHandler, CallOutcome } from './call-handler.js';
import { toGrpcResponse } from './grpc-codec.js';
import { addHealthService } from './health-service.js';
import { rateLimitService } from './proto.js';
import { toCall } from './request-checks.js';

/** The name `grpc.health.v1` clients (Envoy's gRPC health checks among them) ask about. */
export const RATE_LIMIT_SERVICE_NAME = 'envoy.service.ratelimit.v3.RateLimitService';

const grpcStatus: Record<Exclude<CallOutcome['kind'], 'answer'>, status> = {
  invalid: status.INVALID_ARGUMENT,
  unavailable: status.UNAVAILABLE,
  internal: status.INTERNAL,
  // grpc-js sends nothing on a call already cancelled: this status goes nowhere.
  cancelled: status.CANCELLED,
};

/** grpc-js marks a call `cancelled` once its client cancels it, its deadline passes or its connection closes. */
const cancelled = (call: ServerUnaryCall<unknown, unknown>): boolean => call.cancelled;

/** The gRPC front end: `RateLimitService/ShouldRateLimit` and `grpc.health.v1.Health`. */
export function createGrpcServer(handleCall: CallHandler) {
  const server = new Server();
  const health = addHealthService(server, ['', RATE_LIMIT_SERVICE_NAME]);
  server.addService(rateLimitService(), {
    ShouldRateLimit(call: ServerUnaryCall<unknown, unknown>, callback: sendUnaryData<unknown>) {
      handleCall('grpc', () => toCall(call.request), call, cancelled).then(
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
