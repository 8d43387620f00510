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
