import { fileURLToPath } from 'node:url';
import type { ServiceDefinition } from '@grpc/grpc-js';
import { loadSync, type Options } from '@grpc/proto-loader';

/** `proto/` beside `src/` and `dist/`: the package ships it. */
export const PROTO_DIR = fileURLToPath(new URL('../proto', import.meta.url));

/**
 * Messages as plain objects with camelCase fields and enums as names, which is also the
 * proto3 JSON shape, so the gRPC and HTTP front ends share one translation.
 */
export const LOADER_OPTIONS: Options = { keepCase: false, longs: Number, enums: String, defaults: false, oneofs: true };

/** `envoy.service.ratelimit.v3.RateLimitService`, from the package's own copy of `rls.proto`. */
export function loadRateLimitService(): ServiceDefinition {
  const definition = loadSync('envoy/service/ratelimit/v3/rls.proto', { ...LOADER_OPTIONS, includeDirs: [PROTO_DIR] });
  return definition['envoy.service.ratelimit.v3.RateLimitService'] as ServiceDefinition;
}
