import { badRequest, toCall } from './request-checks.js';
import { sluiceMetadata } from './sluice-metadata.js';
import type { DescriptorAnswer, RateLimitAnswer, RateLimitCall } from './wire-types.js';

/**
 * proto3 JSON accepts each field under its JSON name (lowerCamelCase) or its proto name
 * (snake_case); the checks read camelCase, so snake_case names are renamed first.
 */
function camelCased(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(camelCased);
  if (typeof value !== 'object' || value === null) return value;
  const renamed: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    renamed[key.replace(/_([a-z])/g, (_, letter: string) => letter.toUpperCase())] = camelCased(item);
  }
  return renamed;
}

/** A `POST /json` body, as envoyproxy/ratelimit takes it: a `RateLimitRequest` in proto3 JSON. */
export function parseJsonCall(body: string): RateLimitCall {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    badRequest('the body is not JSON');
  }
  return toCall(camelCased(parsed));
}

/** proto3 JSON for a `google.protobuf.Duration`: seconds with up to nine decimals. */
function durationJson(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  const rest = ms % 1000;
  return rest === 0 ? `${seconds}s` : `${seconds}.${String(rest).padStart(3, '0')}s`;
}

/** proto3 JSON leaves out fields at their default (0, '', absent), as Go's protojson does. */
function statusJson(status: DescriptorAnswer): Record<string, unknown> {
  const json: Record<string, unknown> = { code: status.code };
  if (status.currentLimit !== undefined) {
    const { requestsPerUnit, unit, name } = status.currentLimit;
    json.currentLimit = {
      ...(name === '' ? {} : { name }),
      ...(requestsPerUnit === 0 ? {} : { requestsPerUnit }),
      ...(unit === 'UNKNOWN' ? {} : { unit }),
    };
  }
  if (status.limitRemaining !== 0) json.limitRemaining = status.limitRemaining;
  if (status.durationUntilResetMs !== 0) json.durationUntilReset = durationJson(status.durationUntilResetMs);
  return json;
}

/** The `RateLimitResponse` in proto3 JSON. */
export function toJsonResponse(answer: RateLimitAnswer): Record<string, unknown> {
  const json: Record<string, unknown> = { overallCode: answer.overallCode, statuses: answer.statuses.map(statusJson) };
  if (answer.responseHeaders.length > 0) json.responseHeadersToAdd = answer.responseHeaders;
  const metadata = sluiceMetadata(answer.statuses);
  if (metadata !== undefined) json.dynamicMetadata = { sluice: metadata };
  return json;
}
