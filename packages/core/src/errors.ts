/**
 * Every error sluice throws carries a stable `code`. Identify errors by code, not by
 * `instanceof`: two copies of core can be loaded side by side. docs/errors.md lists them all.
 */
export type SluiceErrorCode =
  | 'ERR_SLUICE_UNKNOWN_OPTION'
  | 'ERR_SLUICE_CONFLICTING_OPTIONS'
  | 'ERR_SLUICE_INVALID_LIMIT'
  | 'ERR_SLUICE_INVALID_WINDOW'
  | 'ERR_SLUICE_INVALID_DURATION'
  | 'ERR_SLUICE_UNKNOWN_ALGORITHM'
  | 'ERR_SLUICE_INVALID_BURST'
  | 'ERR_SLUICE_INVALID_REFILL'
  | 'ERR_SLUICE_INVALID_QUEUE'
  | 'ERR_SLUICE_INVALID_POLICIES'
  | 'ERR_SLUICE_INVALID_POLICY_NAME'
  | 'ERR_SLUICE_DUPLICATE_POLICY'
  | 'ERR_SLUICE_INVALID_THROTTLE'
  | 'ERR_SLUICE_INVALID_STORE'
  | 'ERR_SLUICE_INVALID_CLOCK'
  | 'ERR_SLUICE_INVALID_PREFIX'
  | 'ERR_SLUICE_NAMESPACE_TAKEN'
  | 'ERR_SLUICE_INVALID_ON_STORE_ERROR'
  | 'ERR_SLUICE_INVALID_STORE_TIMEOUT'
  | 'ERR_SLUICE_INVALID_LOGGER'
  | 'ERR_SLUICE_INVALID_MAX_KEYS'
  | 'ERR_SLUICE_INVALID_CLIENT'
  | 'ERR_SLUICE_INVALID_OPTION'
  | 'ERR_SLUICE_INVALID_KEY'
  | 'ERR_SLUICE_INVALID_COST'
  | 'ERR_SLUICE_INVALID_MESSAGE'
  | 'ERR_SLUICE_NO_ERROR_THROWN'
  | 'ERR_SLUICE_STORE_UNAVAILABLE'
  | 'ERR_SLUICE_STORE_TIMEOUT'
  | 'ERR_SLUICE_BAD_STORE_REPLY'
  | 'ERR_SLUICE_INVALID_HEADERS'
  | 'ERR_SLUICE_INVALID_IPV6_SUBNET'
  | 'ERR_SLUICE_INVALID_HANDLER'
  | 'ERR_SLUICE_NOT_CALLED'
  | 'ERR_SLUICE_INVALID_TRAFFIC'
  | 'ERR_SLUICE_INVALID_TRACE'
  | 'ERR_SLUICE_RULES_SYNTAX'
  | 'ERR_SLUICE_RULES_UNKNOWN_KEY'
  | 'ERR_SLUICE_RULES_MISSING_KEY'
  | 'ERR_SLUICE_RULES_INVALID_VALUE'
  | 'ERR_SLUICE_RULES_DUPLICATE'
  | 'ERR_SLUICE_RULES_CONFLICT'
  | 'ERR_SLUICE_RULES_INVALID_POLICY'
  | 'ERR_SLUICE_RULES_READ'
  | 'ERR_SLUICE_INVALID_REQUEST'
  | 'ERR_SLUICE_INVALID_SERVER_OPTION'
  | 'ERR_SLUICE_STORE_CONNECT'
  | 'ERR_SLUICE_UNSUPPORTED'
  | 'ERR_SLUICE_HEADERS_SENT';

const brand = Symbol.for('sluice.error');

export class SluiceError extends Error {
  readonly code: SluiceErrorCode;
  readonly [brand] = true;

  constructor(code: SluiceErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SluiceError';
    this.code = code;
  }
}

/** True for any sluice error, whichever copy of core created it. */
export function isSluiceError(value: unknown): value is SluiceError {
  return typeof value === 'object' && value !== null && (value as { [brand]?: boolean })[brand] === true;
}

/** Formats a received value for an error message without dumping large objects. */
export function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'function') return 'a function';
  if (Array.isArray(value)) return 'an array';
  if (value === null) return 'null';
  if (typeof value === 'object') return 'an object';
  // `10n` as such: "received 10" would hide why a limit of 10 was refused.
  if (typeof value === 'bigint') return `${value}n`;
  return String(value);
}

/**
 * What a thrown value says, for a log line or an error's message: an error's message, else the
 * value as text. Never throws: a value that cannot become text (`Object.create(null)`, a
 * `toString` that throws) is described instead, where `String()` threw out of the very handler
 * that caught it (an unhandled rejection, or a 500 under a fail-open policy).
 */
export function messageOf(value: unknown): string {
  try {
    return value instanceof Error ? String(value.message) : String(value);
  } catch {
    return describe(value);
  }
}

/** Throws a configuration error naming the option, the value received and what was expected. */
export function invalid(code: SluiceErrorCode, option: string, value: unknown, expected: string): never {
  throw new SluiceError(code, `[sluice] Option \`${option}\` must be ${expected}; received ${describe(value)}.`);
}

/**
 * What a function of the user's threw or rejected with, as an error a framework acts on.
 * Express's `next`, Fastify's `done` and Koa's error handling read `undefined`, `null` or any
 * other falsy reason as no error: a `key` function's `Promise.reject()` let every request
 * through uncounted on Express and Fastify, and left it unanswered on Koa.
 */
export function thrownError(reason: unknown): unknown {
  if (reason) return reason;
  return new SluiceError(
    'ERR_SLUICE_NO_ERROR_THROWN',
    `[sluice] A function given to the rate limiter threw or rejected with ${describe(reason)}, which is no error; the request fails rather than pass.`,
  );
}
