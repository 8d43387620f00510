import {
  type Server,
  type ServerUnaryCall,
  type ServerWritableStream,
  type ServiceDefinition,
  type sendUnaryData,
  status,
} from '@grpc/grpc-js';
import { service } from 'grpc-health-check';

type Request = { service: string };
type Reply = { status: string };

/**
 * The longest service name asked about: a watch holds its request for as long as it lasts, so
 * 256 watches of 1 MiB names held 256 MB on one connection for good.
 */
const MAX_NAME_LENGTH = 256;
const tooLong = (name: string) => ({
  code: status.INVALID_ARGUMENT,
  details: `a service name of ${name.length} characters; at most ${MAX_NAME_LENGTH} are accepted`,
});

/**
 * `grpc.health.v1.Health` (Check, Watch, List) for `names`, which share one status. sluice
 * serves it itself rather than through grpc-health-check's `HealthImplementation` so that a
 * draining server can end `Watch` streams: they never end on their own, and gRPC's
 * `tryShutdown` waits for every open stream, so each watcher (gRPC client-side health checking
 * keeps one open) held shutdown for the whole `shutdownTimeoutMs`.
 */
export function addHealthService(server: Server, names: readonly string[]) {
  let current: 'SERVING' | 'NOT_SERVING' = 'SERVING';
  let draining = false;
  const watches = new Set<ServerWritableStream<Request, Reply>>();
  const statusOf = (name: string): string | undefined => (names.includes(name) ? current : undefined);

  server.addService(service as unknown as ServiceDefinition, {
    check(call: ServerUnaryCall<Request, Reply>, callback: sendUnaryData<Reply>) {
      if (call.request.service.length > MAX_NAME_LENGTH) return callback(tooLong(call.request.service));
      const known = statusOf(call.request.service);
      if (known === undefined)
        callback({ code: status.NOT_FOUND, details: `Health status unknown for service ${call.request.service}` });
      else callback(null, { status: known });
    },
    watch(call: ServerWritableStream<Request, Reply>) {
      if (call.request.service.length > MAX_NAME_LENGTH) {
        call.emit('error', tooLong(call.request.service));
        return;
      }
      call.write({ status: statusOf(call.request.service) ?? 'SERVICE_UNKNOWN' });
      if (draining) {
        call.end();
        return;
      }
      watches.add(call);
      call.on('cancelled', () => watches.delete(call));
    },
    list(_: unknown, callback: sendUnaryData<{ statuses: Record<string, Reply> }>) {
      callback(null, { statuses: Object.fromEntries(names.map((name) => [name, { status: current }])) });
    },
  });

  return {
    setServing(serving: boolean): void {
      const next = serving ? 'SERVING' : 'NOT_SERVING';
      if (next === current) return;
      current = next;
      for (const call of watches) if (statusOf(call.request.service) !== undefined) call.write({ status: current });
    },
    /** Ends every `Watch` stream after the status it has (a draining server's NOT_SERVING). */
    endWatches(): void {
      draining = true;
      for (const call of watches) call.end();
      watches.clear();
    },
  };
}
