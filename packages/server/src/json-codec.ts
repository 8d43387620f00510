import { badRequest, REQUEST_LIMITS, toCall } from './request-checks.js';
import { sluiceMetadata } from './sluice-metadata.js';
import { type DescriptorAnswer, OVERRIDE_UNITS, type RateLimitAnswer, type RateLimitCall } from './wire-types.js';

/**
 * proto3 JSON names each field in lowerCamelCase or as the proto does (snake_case); either is
 * read, and both at once are refused, as protojson refuses them ("duplicate field"): which of
 * the two counted would be a guess. Only `RateLimitRequest`'s own fields are read, one level at
 * a time, so an unknown field is never walked: a body nested a million deep costs nothing and
 * breaks no stack.
 */
function field(value: object, jsonName: string, protoName = jsonName): unknown {
  const object = value as Record<string, unknown>;
  if (protoName !== jsonName && Object.hasOwn(object, jsonName) && Object.hasOwn(object, protoName))
    badRequest(`\`${protoName}\` is given under both its names, \`${jsonName}\` and \`${protoName}\``);
  return object[jsonName] ?? object[protoName];
}

/**
 * A list read item by item; anything else, or a list longer than a call may hold (`most`), is
 * left for the checks to refuse by its length: reading 250,000 descriptors first cost 137 ms.
 */
const eachOf = (value: unknown, read: (item: unknown) => unknown, most: number): unknown =>
  Array.isArray(value) && value.length <= most ? value.map(read) : value;

/** An object read as `read` says; anything else is left for the checks to refuse. */
const objectOf = (value: unknown, read: (object: object) => object): unknown =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? read(value) : value;

/**
 * An override's unit by name: in proto3 JSON an enum comes as its name or its number. Any other
 * value is left for the checks to refuse.
 */
const unitOf = (value: unknown): unknown =>
  typeof value === 'number' && Number.isInteger(value)
    ? ((OVERRIDE_UNITS as readonly string[])[value] ?? value)
    : value;

const readEntry = (entry: unknown) => objectOf(entry, (e) => ({ key: field(e, 'key'), value: field(e, 'value') }));

const readDescriptor = (descriptor: unknown) =>
  objectOf(descriptor, (d) => ({
    entries: eachOf(field(d, 'entries'), readEntry, REQUEST_LIMITS.entries),
    limit: objectOf(field(d, 'limit'), (l) => ({
      requestsPerUnit: field(l, 'requestsPerUnit', 'requests_per_unit'),
      unit: unitOf(field(l, 'unit')),
    })),
    hitsAddend: field(d, 'hitsAddend', 'hits_addend'),
  }));

const readRequest = (request: unknown) =>
  objectOf(request, (r) => ({
    domain: field(r, 'domain'),
    descriptors: eachOf(field(r, 'descriptors'), readDescriptor, REQUEST_LIMITS.descriptors),
    hitsAddend: field(r, 'hitsAddend', 'hits_addend'),
  }));

/**
 * Refuses bytes that are not UTF-8: read as U+FFFD, distinct values would share one count. A
 * byte-order mark is kept, and `JSON.parse` refuses it.
 */
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** A `POST /json` body, as envoyproxy/ratelimit takes it: a `RateLimitRequest` in proto3 JSON. */
export function parseJsonCall(body: Uint8Array): RateLimitCall {
  let text: string;
  try {
    text = utf8.decode(body);
  } catch {
    badRequest('the body is not UTF-8');
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    badRequest('the body is not JSON');
  }
  return toCall(readRequest(parsed));
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
