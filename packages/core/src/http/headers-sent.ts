import type { ServerResponse } from 'node:http';
import { SluiceError } from '../errors.js';

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

/** A refusal whose `message` function was awaited, once the response is known unanswered. */
export const refusalUnlessSent = <T>(res: ServerResponse, refusal: Promise<T>): Promise<T> =>
  refusal.then((outcome) => {
    checkUnsentMeanwhile(res);
    return outcome;
  });
