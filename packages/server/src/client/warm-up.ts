import {
  type Client,
  type ClientUnaryCall,
  Metadata,
  type MethodDefinition,
  type ServiceError,
  status,
} from '@grpc/grpc-js';
import { SluiceError } from '@sluice/core';
import { service as health } from 'grpc-health-check';

/** Failures of the call itself, before any service answered it. */
const unanswered = new Set<number>([status.UNAVAILABLE, status.DEADLINE_EXCEEDED, status.CANCELLED]);

/** How long the call that reads why the channel could not connect may take. */
const CONNECTION_ERROR_WAIT_MS = 200;

/**
 * Connects `client`'s channel and sends one `grpc.health.v1.Health/Check` over it, which the
 * service counts nowhere (no quota, no `sluice_service_calls_total`). Besides the connection,
 * a channel's first call pays for grpc-js's and HTTP/2's set-up on both sides and for the
 * first run of their code, which with a fresh service outlasted a 20 ms `storeTimeoutMs`:
 * this call pays it instead of the first decision. It resolves on any answer (a service
 * without `grpc.health.v1` answers UNIMPLEMENTED, over the same path), and rejects when no
 * answer came within `deadlineMs`, naming why the channel could not connect.
 */
export function warmUp(
  client: Client,
  address: string,
  deadlineMs: number,
): { warmed: Promise<void>; cancel: () => void } {
  const { path, requestSerialize, responseDeserialize } = health.Check as MethodDefinition<object, object>;
  let cancelled = false;
  let call: ClientUnaryCall | undefined;
  /** One health check, answered or failed in `done`. */
  const check = (metadata: Metadata, waitMs: number, done: (error: ServiceError | null) => void) =>
    client.makeUnaryRequest(
      path,
      requestSerialize,
      responseDeserialize,
      { service: '' },
      metadata,
      { deadline: Date.now() + waitMs },
      done,
    );
  /** A call failed before any service answered it. */
  const noAnswer = (error: ServiceError | null): error is ServiceError => error !== null && unanswered.has(error.code);
  const warmed = new Promise<void>((resolve, reject) => {
    // Waits for the connection rather than failing at once while it is being made.
    call = check(new Metadata({ waitForReady: true }), deadlineMs, (error) => {
      if (!noAnswer(error)) return resolve();
      const fail = (what: string) =>
        reject(
          new SluiceError('ERR_SLUICE_STORE_UNAVAILABLE', `[sluice] The decision service at ${address} ${what}`, {
            cause: error,
          }),
        );
      if (cancelled) return fail('had not answered when the client was closed');
      // A call waiting for the connection ends with "Deadline exceeded … Waiting for LB pick",
      // whatever kept it waiting: a refused connection, a certificate the client does not
      // trust, a name that does not resolve. A call that does not wait is failed at once with
      // the channel's last connection error.
      call = check(new Metadata(), CONNECTION_ERROR_WAIT_MS, (late) => {
        if (!noAnswer(late)) return resolve();
        if (cancelled) return fail('had not answered when the client was closed');
        const reason = late.code === status.UNAVAILABLE ? late.details : error.message;
        fail(`did not answer within ${deadlineMs} ms: ${reason}`);
      });
    });
  });
  return {
    warmed,
    // A channel closed with this call still waiting for its connection went on reconnecting
    // for good (grpc-js): a client closed while the service was down kept knocking on its port.
    cancel() {
      cancelled = true;
      call?.cancel();
    },
  };
}
