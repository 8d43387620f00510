import { fileURLToPath } from 'node:url';
import type { MethodDefinition, ServiceDefinition } from '@grpc/grpc-js';
import { loadSync, type Options } from '@grpc/proto-loader';

/** `proto/` beside `src/` and `dist/`: the package ships it. */
export const PROTO_DIR = fileURLToPath(new URL('../proto', import.meta.url));

/**
 * Messages as plain objects with camelCase fields and enums as names, which is also the
 * proto3 JSON shape, so the gRPC and HTTP front ends share one translation.
 */
const LOADER_OPTIONS: Options = { keepCase: false, longs: Number, enums: String, defaults: false, oneofs: true };

type RateLimitService = ServiceDefinition<{ ShouldRateLimit: unknown }>;

let loaded: RateLimitService | undefined;

/**
 * `envoy.service.ratelimit.v3.RateLimitService`, from the package's own copy of `rls.proto`,
 * with its codec prepared (`warmCodec`). Loaded once per process and shared by every server and
 * client in it: each load makes new message types, whose codec protobufjs would write again.
 */
export function rateLimitService(): RateLimitService {
  if (loaded === undefined) {
    const definition = loadSync('envoy/service/ratelimit/v3/rls.proto', {
      ...LOADER_OPTIONS,
      includeDirs: [PROTO_DIR],
    });
    loaded = definition['envoy.service.ratelimit.v3.RateLimitService'] as unknown as RateLimitService;
    warmCodec(loaded.ShouldRateLimit);
  }
  return loaded;
}

/** A request and a response with every field either side sends, `dynamic_metadata` included. */
const sampleRequest = {
  domain: 'warm-up',
  hitsAddend: 1,
  descriptors: [
    {
      entries: [{ key: 'k', value: 'v' }],
      limit: { requestsPerUnit: 1, unit: 'SECOND' },
      hitsAddend: { value: 0 },
    },
  ],
};
const sampleResponse = {
  overallCode: 'OVER_LIMIT',
  statuses: [
    {
      code: 'OVER_LIMIT',
      currentLimit: { requestsPerUnit: 1, unit: 'SECOND', name: 'n' },
      limitRemaining: 0,
      durationUntilReset: { seconds: 1, nanos: 0 },
    },
  ],
  responseHeadersToAdd: [{ key: 'k', value: 'v' }],
  dynamicMetadata: {
    fields: {
      sluice: {
        structValue: {
          fields: {
            statuses: {
              listValue: {
                values: [
                  { structValue: { fields: { retryAfterMs: { numberValue: 1 }, overLimit: { stringValue: 's' } } } },
                ],
              },
            },
          },
        },
      },
    },
  },
};

/**
 * protobufjs writes each message type's encoder and decoder on its first use: in the first
 * call that took about 3 ms of the client's CPU and 7 ms of the service's, enough with the
 * rest to outlast a 20 ms `storeTimeoutMs`. One pass of both messages at start-up pays it there.
 */
function warmCodec(method: MethodDefinition<object, object>): void {
  method.requestDeserialize(method.requestSerialize(sampleRequest));
  method.responseDeserialize(method.responseSerialize(sampleResponse));
}
