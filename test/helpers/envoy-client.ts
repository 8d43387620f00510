import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import {
  type ChannelCredentials,
  type Client,
  credentials,
  loadPackageDefinition,
  Server,
  ServerCredentials,
  type ServiceDefinition,
  type ServiceError,
} from '@grpc/grpc-js';
import { loadSync, type Options } from '@grpc/proto-loader';
import { protoPath as healthProto } from 'grpc-health-check';

/** The upstream protos that `@grpc/grpc-js-xds` ships: Envoy's data-plane-api and its imports. */
const deps = join(dirname(createRequire(import.meta.url).resolve('@grpc/grpc-js-xds/package.json')), 'deps');
export const OFFICIAL_INCLUDE_DIRS = ['envoy-api', 'xds', 'protoc-gen-validate', 'googleapis'].map((d) =>
  join(deps, d),
);

const options: Options = { keepCase: true, longs: Number, enums: String, defaults: false, oneofs: true };

/** Loads Envoy's own `rls.proto` (with every import), as a real Envoy-side client would. */
export function loadOfficialRls(loaderOptions: Options = options) {
  return loadSync('envoy/service/ratelimit/v3/rls.proto', { ...loaderOptions, includeDirs: OFFICIAL_INCLUDE_DIRS });
}

type Unary<Req, Res> = (request: Req, callback: (error: ServiceError | null, response?: Res) => void) => void;

export interface OfficialResponse {
  overall_code?: string;
  statuses?: {
    code?: string;
    current_limit?: { requests_per_unit?: number; unit?: string; name?: string };
    limit_remaining?: number;
    duration_until_reset?: { seconds?: number; nanos?: number };
  }[];
  response_headers_to_add?: { key: string; value: string }[];
  dynamic_metadata?: { fields?: Record<string, unknown> };
}

export interface OfficialRequest {
  domain?: string;
  descriptors?: {
    entries?: { key: string; value: string }[];
    limit?: { requests_per_unit: number; unit: string };
  }[];
  hits_addend?: number;
}

/** A `RateLimitService` client built from the official protos, with snake_case fields as Envoy names them. */
export function createEnvoyClient(address: string, channel: ChannelCredentials = credentials.createInsecure()) {
  const api = loadPackageDefinition(loadOfficialRls()) as unknown as {
    envoy: { service: { ratelimit: { v3: { RateLimitService: new (a: string, c: unknown) => Client } } } };
  };
  const client = new api.envoy.service.ratelimit.v3.RateLimitService(address, channel);
  const call = (
    client as unknown as { ShouldRateLimit: Unary<OfficialRequest, OfficialResponse> }
  ).ShouldRateLimit.bind(client);
  return {
    client,
    shouldRateLimit(request: OfficialRequest): Promise<OfficialResponse> {
      return new Promise((resolve, reject) => {
        call(request, (error, response) => (error ? reject(error) : resolve(response as OfficialResponse)));
      });
    },
    close: () => client.close(),
  };
}

/** A `grpc.health.v1.Health` client: `check(service)` resolves with the serving status. */
export function createHealthClient(address: string, channel: ChannelCredentials = credentials.createInsecure()) {
  const health = loadPackageDefinition(loadSync(healthProto, { enums: String })) as unknown as {
    grpc: { health: { v1: { Health: new (a: string, c: unknown) => Client } } };
  };
  const client = new health.grpc.health.v1.Health(address, channel);
  type Check = (
    request: { service: string },
    callback: (error: ServiceError | null, value?: { status: string }) => void,
  ) => void;
  const check = (client as unknown as { Check: Check }).Check.bind(client);
  return {
    check: (service = ''): Promise<string> =>
      new Promise((resolve, reject) =>
        check({ service }, (error, value) => (error ? reject(error) : resolve(value?.status ?? ''))),
      ),
    close: () => client.close(),
  };
}

/**
 * A rate-limit service of another make, on loopback: it answers every `ShouldRateLimit` with
 * what `answer` returns for the request, over the official protos, as envoyproxy/ratelimit
 * answers in modes sluice's service has no need of (its global `SHADOW_MODE`).
 */
export async function serveFixedRls(answer: (request: OfficialRequest) => OfficialResponse) {
  const api = loadPackageDefinition(loadOfficialRls()) as unknown as {
    envoy: { service: { ratelimit: { v3: { RateLimitService: { service: ServiceDefinition } } } } };
  };
  const server = new Server();
  server.addService(api.envoy.service.ratelimit.v3.RateLimitService.service, {
    ShouldRateLimit: (
      call: { request: OfficialRequest },
      callback: (error: null, response: OfficialResponse) => void,
    ) => callback(null, answer(call.request)),
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, bound) =>
      error ? reject(error) : resolve(bound),
    ),
  );
  return { address: `127.0.0.1:${port}`, close: () => server.forceShutdown() };
}
