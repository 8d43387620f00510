import type { ServerResponse } from 'node:http';
import { SluiceError } from '../errors.js';
import { type AdapterBinding, type Outcome, SKIPPED } from './adapter-contract.js';

/**
 * Fails a request whose response headers were sent before the limiter met it: mounted after
 * middleware that wrote the response, or flushed its headers, and went on. The limiter could
 * then neither send its fields nor refuse with 429, and a refusal would reach the client under
 * the status already sent. Checked before the request is counted, so it spends no quota.
 */
export function checkHeadersUnsent(res: ServerResponse): void {
  if (!res.headersSent) return;
  throw new SluiceError(
    'ERR_SLUICE_HEADERS_SENT',
    `[sluice] The response's headers (status ${res.statusCode}) were sent before the rate limiter met the request, so it can neither send its RateLimit fields nor refuse the request. Mount the limiter before any middleware that writes the response.`,
  );
}

/**
 * Fails a request whose response other middleware answered while the limiter awaited (a
 * function of the user's, the store, a ban's strike; a request timeout, say): nothing more is
 * written into it. A refusal charged nothing; what a request let through was charged, the
 * caller gives back first.
 */
export function checkUnsentMeanwhile(res: ServerResponse): void {
  if (!res.headersSent) return;
  throw new SluiceError(
    'ERR_SLUICE_HEADERS_SENT',
    `[sluice] The response's headers (status ${res.statusCode}) were sent by other middleware while the rate limiter decided, so it can neither send its RateLimit fields nor refuse the request; the request spends no quota.`,
  );
}

/** A request passed on undecided (skipped, allow-listed, limited by no rule), unless other middleware answered it meanwhile. */
export function skippedUnlessSent(res: ServerResponse): Outcome {
  checkUnsentMeanwhile(res);
  return SKIPPED;
}

/**
 * A refusal, once a `message` function awaited is known to have left the response unanswered.
 * A refusal made at once (no function awaited) does not look the response up.
 */
export const refusalUnlessSent = <Res>(
  binding: Pick<AdapterBinding<never, Res>, 'rawResponse'>,
  res: Res,
  refusal: Outcome | Promise<Outcome>,
): Outcome | Promise<Outcome> =>
  refusal instanceof Promise
    ? refusal.then((outcome) => {
        checkUnsentMeanwhile(binding.rawResponse(res));
        return outcome;
      })
    : refusal;
