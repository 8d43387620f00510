import { describe, invalid, SluiceError } from '../errors.js';
import { isThenable } from '../thenable.js';
import type { Decision } from '../types.js';
import type { Outcome } from './adapter-contract.js';
import { PROBLEM_CONTENT_TYPE, problemBody, problemStatus } from './problem.js';

type Awaitable<T> = T | Promise<T>;
type Body = string | Record<string, unknown>;

/** The body of a refusal without writing `onLimited`, as express-rate-limit's `message`. */
export type LimitedMessage<Req> = Body | ((req: Req, decision: Decision) => Awaitable<Body>);

export interface RefusalOptions<Req> {
  /** Body of the refusal: text as `text/plain`, an object as JSON. @default an RFC 9457 problem document */
  message?: LimitedMessage<Req> | undefined;
  /** Status of a refusal over the quota. @default 429 */
  statusCode?: number | undefined;
}

/** What the adapter sends for a refused request when there is no `onLimited`. */
export interface Refusal {
  status: number;
  contentType: string;
  body: string;
}

export type RefusalFor<Req> = (req: Req, decision: Decision, status?: number) => Awaitable<Refusal>;

const TEXT = 'text/plain; charset=utf-8';
const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * A `message` function's body as sent: text as is, an object as JSON. Anything else (nothing,
 * a number, an object JSON cannot write) fails the request with a coded error, where it would
 * be sent as `null`, an empty body or a bare number under a JSON type.
 */
const render = (status: number, body: unknown): Refusal => {
  if (typeof body === 'string') return { status, contentType: TEXT, body };
  const json = isJsonShaped(body) ? jsonOf(body) : undefined;
  if (json === undefined) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_MESSAGE',
      `[sluice] Your \`message\` function returned ${describe(body)} for this request; it must return a string, or an object JSON can write.`,
    );
  }
  return { status, contentType: JSON_TYPE, body: json };
};

/**
 * A plain object or an array: what JSON writes as it is. A Map, a Set or a class instance would
 * be written as `{}` or by its own `toJSON` (a Date as a string), losing what was meant.
 */
function isJsonShaped(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const prototype = Object.getPrototypeOf(value);
  return Array.isArray(value) || prototype === Object.prototype || prototype === null;
}

/** `value` as JSON text, when it is an object JSON can write (no cycle, no BigInt); else undefined. */
function jsonOf(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  try {
    return JSON.stringify(value);
  } catch {
    return undefined;
  }
}

/**
 * Validates `message` and `statusCode` and returns how a refusal is answered. A refusal
 * because the store could not decide keeps its 503 problem document whatever these say, so an
 * outage is never reported as abuse. `status` overrides the status (a ban's).
 */
export function checkRefusal<Req>(options: Record<string, unknown>): RefusalFor<Req> {
  const { message, statusCode, onLimited } = options;
  if (onLimited !== undefined && (message !== undefined || statusCode !== undefined)) {
    throw new SluiceError(
      'ERR_SLUICE_CONFLICTING_OPTIONS',
      '[sluice] Options `message` and `statusCode` shape the default response; with `onLimited` you send your own. Give one or the other.',
    );
  }
  if (
    statusCode !== undefined &&
    (typeof statusCode !== 'number' || !Number.isInteger(statusCode) || statusCode < 400 || statusCode > 599)
  ) {
    invalid('ERR_SLUICE_INVALID_OPTION', 'statusCode', statusCode, 'an HTTP error status from 400 to 599');
  }
  const kind = typeof message;
  if (message !== undefined && kind !== 'string' && kind !== 'function' && !isJsonShaped(message)) {
    invalid(
      'ERR_SLUICE_INVALID_OPTION',
      'message',
      message,
      'a string, a plain object or array to send as JSON, or a function',
    );
  }
  // An object is written once, here: one JSON cannot write fails at start-up, not per refusal.
  const fixedJson = kind === 'object' ? jsonOf(message) : undefined;
  if (kind === 'object' && fixedJson === undefined)
    invalid('ERR_SLUICE_INVALID_OPTION', 'message', message, 'an object JSON can write (no cycle, no BigInt)');
  const quotaStatus = (statusCode as number | undefined) ?? 429;
  return (req, decision, status) => {
    if (decision.reason === 'store-unavailable') {
      const unavailable = problemStatus(decision);
      return { status: unavailable, contentType: PROBLEM_CONTENT_TYPE, body: problemBody(decision, unavailable) };
    }
    const sent = status ?? quotaStatus;
    if (message === undefined)
      return { status: sent, contentType: PROBLEM_CONTENT_TYPE, body: problemBody(decision, sent) };
    if (typeof message === 'string') return render(sent, message);
    if (fixedJson !== undefined) return { status: sent, contentType: JSON_TYPE, body: fixedJson };
    const made = (message as (req: Req, decision: Decision) => Awaitable<unknown>)(req, decision);
    return isThenable(made) ? Promise.resolve(made).then((body) => render(sent, body)) : render(sent, made);
  };
}

/**
 * The `limited` outcome for a refused decision: with `onLimited` the adapter calls it (no
 * `refusal`, but the status its response starts from: a ban's `status`, else `problemStatus`);
 * otherwise the refusal `message` and `statusCode` shape, at once or, for an async `message`,
 * once it is made.
 */
export function createRefuse<Req>(
  options: Record<string, unknown>,
): (req: Req, decision: Decision, status?: number) => Outcome | Promise<Outcome> {
  const refusalFor = checkRefusal<Req>(options);
  if (options.onLimited !== undefined) {
    return (_req, decision, status) => ({
      action: 'limited',
      decision,
      refusal: undefined,
      status: status ?? problemStatus(decision),
    });
  }
  return (req, decision, status) => {
    const refusal = refusalFor(req, decision, status);
    return refusal instanceof Promise
      ? refusal.then((made): Outcome => ({ action: 'limited', decision, refusal: made }))
      : { action: 'limited', decision, refusal };
  };
}
