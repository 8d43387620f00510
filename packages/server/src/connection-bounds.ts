/**
 * How much of the service one client can hold. A `RateLimitRequest` is a few hundred bytes
 * and Envoy sends each at once, so these bounds cost a proxy nothing; they stop a client that
 * sends a request slowly, or in part, or many at once, from holding the service's memory.
 */

/** The largest request either port reads: gRPC answers RESOURCE_EXHAUSTED, HTTP 413. */
export const MAX_REQUEST_BYTES = 1024 * 1024;

/**
 * Calls one gRPC connection may have open at once (HTTP/2's SETTINGS_MAX_CONCURRENT_STREAMS).
 * Envoy keeps one connection per worker and does not open another past this (it queues the
 * call): 256 calls in flight is a worker deciding 256,000 requests a second at 1 ms each.
 */
export const MAX_CALLS_PER_CONNECTION = 256;

export interface ConnectionTimeouts {
  /** Longest a request may take to arrive, from its headers to its last byte, on either port. */
  requestTimeoutMs: number;
  /** A gRPC connection with no call open this long is closed (GOAWAY first). */
  grpcIdleTimeoutMs: number;
}
