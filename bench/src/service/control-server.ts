import { Server, ServerCredentials, type ServiceDefinition } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { PROTO_DIR } from '@sluice/server';

/**
 * The control for the service bench: a `@grpc/grpc-js` server that answers every
 * ShouldRateLimit with OK (one OK status per descriptor) and decides nothing. Same proto, same
 * loader options as `sluice serve`, so under the same load its figures are what gRPC alone
 * costs; the gap to the service is the decision. Prints the line `sluice serve` prints when
 * it listens, so the bench starts both alike.
 */
const definition = loadSync('envoy/service/ratelimit/v3/rls.proto', {
  keepCase: false,
  longs: Number,
  enums: String,
  defaults: false,
  oneofs: true,
  includeDirs: [PROTO_DIR],
});
const service = definition['envoy.service.ratelimit.v3.RateLimitService'] as ServiceDefinition;
const server = new Server();
type Request = { descriptors?: unknown[] };
server.addService(service, {
  ShouldRateLimit(call: { request: Request }, callback: (error: null, response: object) => void) {
    const statuses = (call.request.descriptors ?? []).map(() => ({ code: 'OK' }));
    callback(null, { overallCode: 'OK', statuses });
  },
});
server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, port) => {
  if (error !== null) throw error;
  process.stderr.write(`${JSON.stringify({ msg: 'listening', grpcPort: port })}\n`);
});
process.once('SIGTERM', () => server.forceShutdown());
