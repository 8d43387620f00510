import type { ServerResponse } from 'node:http';
import { describe, messageOf, SluiceError } from '../errors.js';
import type { RateLimitStore } from '../types.js';
import type { WarnOnce } from './warnings.js';

type Awaitable<T> = T | Promise<T>;

/** express-rate-limit's names and meaning: decide after the response whether it counted. */
export interface CountByOutcomeOptions<Req, Res> {
  /** Give the quota back when the request failed (status ≥ 400); one whose client left before its response stays counted. */
  skipFailedRequests?: boolean | undefined;
  /** Give the quota back when the request succeeded. */
  skipSuccessfulRequests?: boolean | undefined;
  /** What success means. @default status below 400 */
  requestWasSuccessful?: ((req: Req, res: Res) => Awaitable<boolean>) | undefined;
}

/** Watches one counted request's response and refunds it when its outcome says so. */
export type AfterResponse<Req, Res> = (req: Req, res: Res, raw: ServerResponse, refund: () => Promise<void>) => void;

const ignore = (): void => {};

/**
 * The refund waits for the response's `close`: a response that was fully sent is judged by
 * `requestWasSuccessful`; one the client aborted first (or that failed) stays counted. Its
 * handler may still be running: refunded then, as express-rate-limit refunds it, a client
 * that drops each connection would have run handlers past the limit uncounted. The refund is
 * the store's own atomic one, so it is exact under concurrency, and dated by its charge: it gives
 * back only what the charge still holds (nothing once the charge's window has passed).
 */
export function checkCountByOutcome<Req, Res>(
  options: Record<string, unknown>,
  warn: WarnOnce,
  store: RateLimitStore | undefined,
): AfterResponse<Req, Res> | undefined {
  const { skipFailedRequests = false, skipSuccessfulRequests = false, requestWasSuccessful } = options;
  for (const [name, value] of Object.entries({ skipFailedRequests, skipSuccessfulRequests })) {
    if (typeof value !== 'boolean') {
      throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `[sluice] Option \`${name}\` must be true or false.`);
    }
  }
  if (requestWasSuccessful !== undefined && typeof requestWasSuccessful !== 'function') {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_HANDLER',
      '[sluice] Option `requestWasSuccessful` must be a function of the request and the response.',
    );
  }
  if (skipFailedRequests && skipSuccessfulRequests) {
    throw new SluiceError(
      'ERR_SLUICE_CONFLICTING_OPTIONS',
      '[sluice] Options `skipFailedRequests` and `skipSuccessfulRequests` together would count nothing; use `skip` or no limiter.',
    );
  }
  if (!skipFailedRequests && !skipSuccessfulRequests) {
    if (requestWasSuccessful === undefined) return undefined;
    throw new SluiceError(
      'ERR_SLUICE_CONFLICTING_OPTIONS',
      '[sluice] Option `requestWasSuccessful` is used only with `skipFailedRequests` or `skipSuccessfulRequests`.',
    );
  }
  if (store?.refunds === false) {
    const option = skipFailedRequests ? 'skipFailedRequests' : 'skipSuccessfulRequests';
    throw new SluiceError(
      'ERR_SLUICE_CONFLICTING_OPTIONS',
      `[sluice] Option \`${option}\` gives a charge back after the response, and the store ${store.name} cannot give one back: every request would count.`,
    );
  }
  const judge = requestWasSuccessful as CountByOutcomeOptions<Req, Res>['requestWasSuccessful'];
  return (req, res, raw, refund) => {
    // Seen as it goes out: a response that only stands in for a socket (Fastify's `inject`,
    // light-my-request) finishes without its `writableFinished` ever turning true.
    let finished = false;
    raw.once('finish', () => {
      finished = true;
    });
    raw.once('close', () => {
      if (!fullySent(raw, finished)) return;
      Promise.resolve()
        .then(() => (judge === undefined ? raw.statusCode < 400 : judge(req, res)))
        .then(
          (success: unknown) => {
            if (typeof success !== 'boolean') {
              warn(
                'WRN_SLUICE_NOT_BOOLEAN',
                `\`requestWasSuccessful\` returned ${describe(success)}, not true or false, so the request stays counted`,
              );
            } else if (success ? skipSuccessfulRequests : skipFailedRequests) refund().catch(ignore);
          },
          (error: unknown) =>
            warn(
              'WRN_SLUICE_CALLBACK_FAILED',
              `\`requestWasSuccessful\` threw, so the request stays counted: ${messageOf(error)}`,
            ),
        );
    });
  };
}

/**
 * Whether the response was sent whole before its connection or stream closed: over HTTP/1, it
 * emitted `finish` (or reads `writableFinished`, which a stand-in socket never turns true).
 * Over HTTP/2 (Node's compatibility response) `finish` comes for a stream its client reset
 * too, and `writableFinished` is the stream's, true once reset: the response's own end and the
 * stream's reset code (0, NO_ERROR, for one that completed) are read. A client that reset each
 * stream ran handlers past the limit without end, as one that drops each HTTP/1 connection
 * would have.
 */
function fullySent(raw: ServerResponse, finished: boolean): boolean {
  if (raw.writableEnded !== true) return false;
  const { stream } = raw as { stream?: { rstCode?: number } };
  if (stream === undefined) return finished || raw.writableFinished === true;
  return raw.writableFinished === true && (stream.rstCode === undefined || stream.rstCode === 0);
}
