/**
 * What sluice calls the options of express-rate-limit, @fastify/rate-limit,
 * rate-limiter-flexible and koa-ratelimit, so a migrating user's first run names the fix
 * (issue 15). Names sluice adopted with the same meaning (`message`, `statusCode`,
 * `allowList`, `skipFailedRequests`, …) are options, not entries here. docs/migrating/ has
 * the full mapping.
 */
export const PEER_OPTION_NAMES: Readonly<Record<string, string>> = {
  max: '`limit`',
  points: '`limit`',
  windowMs: '`window`',
  timeWindow: '`window`',
  duration: "`window` (ms or a string: rate-limiter-flexible's `duration: 60` is `window: '60s'`)",
  keyGenerator: '`key`',
  id: '`key`',
  handler: '`onLimited`',
  errorResponseBuilder: '`message` or `onLimited`',
  throw: '`onLimited`',
  errorMessage: '`message`',
  status: '`statusCode`',
  identifier: '`name`',
  driver: '`store`',
  standardHeaders: "`headers: { standard: 'draft-11' }`",
  legacyHeaders: '`headers: { legacy: true }`',
  enableDraftSpec: "`headers: { standard: 'draft-6' }`",
  addHeaders: '`headers`',
  addHeadersOnExceeding: '`headers`',
  disableHeader: '`headers: { standard: false }`',
  keyPrefix: '`prefix`',
  nameSpace: '`prefix`',
  groupId: '`prefix` (limiters with one prefix share their counts)',
  whitelist: '`allowList`',
  allowlist: '`allowList`',
  blacklist: '`ban`, or a `skip` in front of your own 403',
  blockDuration: "the adapters' `ban: { after, duration }` (`createLimiter` has no bans)",
  inMemoryBlockOnConsumed: "the adapters' `ban: { after, duration }` (`createLimiter` has no bans)",
  onBanReach: '`ban` with `onExceeded`',
  skipOnError:
    "`onStoreError`: `'allow'` to pass requests as their `true` does, `'deny'` or `'throw'` to refuse them as their `false`",
  passOnStoreError:
    "`onStoreError`: `'allow'` to pass requests as their `true` does, `'deny'` or `'throw'` to refuse them as their `false`",
  redis: '`store: createRedisStore({ client })`',
  storeClient: '`store: createRedisStore({ client })`',
  db: '`store`',
  cache: '`store: createMemoryStore({ maxKeys })`',
  execEvenly:
    '`queue: { maxDelayMs }` on a `gcra` or `leaky-bucket` policy, with `burst: 1` to space every request (the adapters hold each request `delayMs`; with `createLimiter`, wait `decision.delayMs` yourself)',
};
