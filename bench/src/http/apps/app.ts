import { limitFor, type Mode, windowFor } from '../../inproc/contender.js';

export interface AppSetup {
  /** `bare`, a control (`fixed-headers`, `round-trip:redis`), or `<limiter>:<store>` such as `sluice:redis`. */
  variant: string;
  mode: Mode;
  redisPort: number | undefined;
  /**
   * The Redis database the app's clients select: every server of a framework's group has its
   * own, so that no two share a key (a 429 path's spent key, a pass path's count).
   */
  redisDb: number;
}

/** Starts the app listening on 127.0.0.1:port; resolves with a function that closes it. */
export type StartApp = (setup: AppSetup, port: number) => Promise<() => Promise<void>>;

/** The same small JSON body from every framework. */
export const body = { hello: 'world' };

/**
 * The `fixed-headers` control: the bare app plus the two RateLimit fields with the values
 * sluice sends on the pass path, set as each adapter sets them but never computed (the first
 * limiter of a request sets them on Node's response; Fastify gets lowercased names). It
 * measures what sending the fields costs on its own, which no limiter that sends them avoids.
 */
export const FIXED_HEADERS = 'fixed-headers';
/** The `RateLimit-Policy` field, the same on every response: the counted floors send it as is. */
export const fixedPolicyField: readonly [string, string] = [
  'RateLimit-Policy',
  '"1000000000-per-1m";q=1000000000;w=60',
];
export const fixedRateLimitFields: ReadonlyArray<readonly [string, string]> = [
  fixedPolicyField,
  ['RateLimit', '"1000000000-per-1m";r=999999999;t=60'],
];

/**
 * The `counted-fields` floor: the fields alone, but with `r` counted per client, in a Map keyed
 * by the address the framework resolved, and written anew on every request: no window, no
 * eviction, no policy, no options. The least any limiter that sends true figures does per
 * request; where it alone costs more than a target allows, no such limiter can meet it.
 */
export const COUNTED_FIELDS = 'counted-fields';

/** The counted floors' `RateLimit` value once a client has used `used` units; `RateLimit-Policy` stays fixed. */
export const countedRateLimitField = (used: number): string => `"1000000000-per-1m";r=${1_000_000_000 - used};t=60`;

/** The counted-fields floor's `RateLimit` value for one request of `client`. */
export function createFieldCounter(): (client: string) => string {
  const counts = new Map<string, number>();
  return (client) => {
    const used = (counts.get(client) ?? 0) + 1;
    counts.set(client, used);
    return countedRateLimitField(used);
  };
}

/**
 * The `round-trip:redis` control: the bare app plus one ioredis `INCR` of the client's key per
 * request, awaited before the route runs, with auto-pipelining (one write per turn for every
 * request of the turn, the least ioredis spends per command). No limiter, no fields: what one
 * Redis round trip per request costs the server, which no limiter that counts in Redis avoids.
 */
export const REDIS_ROUND_TRIP = 'round-trip:redis';

/**
 * The `counted-fields:redis` floor: the INCR control, then the two RateLimit fields with `r`
 * from the count INCR answers, written anew on every request (set as the fields control sets
 * them). The least a limiter that counts in Redis and sends true figures does per request;
 * where it alone costs more than a target allows against the INCR control, no such limiter
 * can meet it.
 */
export const REDIS_COUNTED_FIELDS = 'counted-fields:redis';

/**
 * The `sluice:memory-beside-idle-client` floor of the deny cache's 429 path: sluice on the
 * memory store, in a server that also holds a connected Redis client like the Redis store's
 * (ioredis, the same options) and never sends it a command. A server with a Redis store holds
 * such a client whatever it decides in-process, and V8 marks its objects at every full
 * collection; Express's per-request garbage brings one every few hundred milliseconds. Where
 * this floor is slower than the memory store alone, the difference is the client's, which the
 * server of every Redis store pays, however it decides.
 */
export const MEMORY_BESIDE_IDLE_CLIENT = 'sluice:memory-beside-idle-client';

/** sluice's Redis store in local-first mode: decided in-process, synced every 50 ms. */
export const LOCAL_FIRST_REDIS = 'sluice:local-first:redis';

/** The limit and window every limiter of a job gets (see `windowFor`). */
export const limits = (mode: Mode) => ({ max: limitFor(mode), windowMs: windowFor(mode) });

/** Sluice adapters' options for a run: the default algorithm, and every other default kept. */
export const sluiceLimit = (mode: Mode) => ({ limit: limitFor(mode), window: windowFor(mode) });
