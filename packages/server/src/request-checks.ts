import { MAX_UNITS, SluiceError } from '@sluice/core';
import { overrideWindowMs } from './units.js';
import {
  type DescriptorCall,
  OVERRIDE_UNITS,
  type OverrideUnit,
  type RateLimitCall,
  UINT32_MAX,
} from './wire-types.js';

/**
 * Bounds on one request. envoyproxy/ratelimit has none; a decision service facing many
 * proxies needs them, so a malformed or hostile request costs little and counts nothing. They
 * bound what Envoy's configuration names (the domain, descriptor keys, how many), never an
 * entry's value: Envoy copies values from the request as they are (a header, the path), and
 * Envoy lets a call the service refuses through by default (`failure_mode_deny: false`), so a
 * bound on a value would let any client past every limit of the call. A long value is counted
 * under its hash (core's `storeKey`); the message size bounds the rest.
 */
export const REQUEST_LIMITS = {
  domainLength: 256,
  descriptors: 64,
  entries: 16,
  keyLength: 256,
} as const;

/** The units an override may name: every one but UNKNOWN. */
const overrideUnits: readonly string[] = OVERRIDE_UNITS.slice(1);

/** Refuses the whole request: gRPC INVALID_ARGUMENT, HTTP 400. Nothing is counted. */
export function badRequest(message: string): never {
  throw new SluiceError('ERR_SLUICE_INVALID_REQUEST', `[sluice] Invalid RateLimitRequest: ${message}.`);
}

/**
 * Checks a decoded `RateLimitRequest` (camelCase fields, as the gRPC loader and the JSON
 * reader give it) and resolves each descriptor's cost: its own `hits_addend` when present
 * (0 looks without counting), else the request's, where 0 or absent means 1.
 */
export function toCall(message: unknown): RateLimitCall {
  const request = record(message, 'the request');
  const { domain } = request;
  if (typeof domain !== 'string' || domain === '') badRequest('`domain` is required');
  if (domain.length > REQUEST_LIMITS.domainLength)
    badRequest(`\`domain\` is longer than ${REQUEST_LIMITS.domainLength} characters`);
  const requestHits = wholeNumber(request.hitsAddend ?? 0, '`hits_addend`', UINT32_MAX);
  const list = request.descriptors ?? [];
  if (!Array.isArray(list)) badRequest('`descriptors` must be a list');
  if (list.length === 0) badRequest('`descriptors` is empty');
  if (list.length > REQUEST_LIMITS.descriptors)
    badRequest(`${list.length} descriptors; at most ${REQUEST_LIMITS.descriptors} are accepted`);
  const descriptors = list.map((item, i) => toDescriptor(item, i, requestHits === 0 ? 1 : requestHits));
  return { domain, descriptors };
}

function toDescriptor(item: unknown, index: number, requestHits: number): DescriptorCall {
  const where = `descriptors[${index}]`;
  const descriptor = record(item, where);
  const entries = descriptor.entries ?? [];
  if (!Array.isArray(entries) || entries.length === 0) badRequest(`\`${where}.entries\` is empty`);
  if (entries.length > REQUEST_LIMITS.entries)
    badRequest(`\`${where}\` has ${entries.length} entries; at most ${REQUEST_LIMITS.entries} are accepted`);
  const call: DescriptorCall = {
    entries: entries.map((entry, j) => toEntry(entry, `${where}.entries[${j}]`)),
    hits: descriptor.hitsAddend == null ? requestHits : hitsOverride(descriptor.hitsAddend, where),
  };
  if (descriptor.limit != null) call.limit = toOverride(descriptor.limit, `${where}.limit`);
  return call;
}

function toEntry(item: unknown, where: string): { key: string; value: string } {
  const { key, value } = record(item, where);
  if (typeof key !== 'string' || key === '') badRequest(`\`${where}.key\` is required`);
  // Empty, as Envoy sends a header present with no value: counted as that value, as
  // envoyproxy/ratelimit counts it. proto3 sends no empty string, so it arrives as absent
  // (`null` in JSON is the same default).
  if (value != null && typeof value !== 'string') badRequest(`\`${where}.value\` must be a string`);
  if (key.length > REQUEST_LIMITS.keyLength)
    badRequest(`\`${where}.key\` is longer than ${REQUEST_LIMITS.keyLength} characters`);
  return { key, value: value ?? '' };
}

/**
 * `google.protobuf.UInt64Value`: `{ value }` over gRPC, a bare number or numeric string in JSON.
 * A wrapper of 0 arrives as `{}` (proto3 sends no default), so an empty one is a present 0; one
 * with any other field (`{ valu: 5 }`) is refused, not read as that 0.
 */
function hitsOverride(wrapper: unknown, where: string): number {
  const what = `\`${where}.hits_addend\``;
  if (typeof wrapper !== 'object' || wrapper === null) return uint64Cost(wrapper, what);
  const stray = Object.keys(wrapper).find((name) => name !== 'value');
  if (stray !== undefined) badRequest(`${what} has a field \`${stray}\`; a UInt64Value has only \`value\``);
  return uint64Cost((wrapper as { value?: unknown }).value ?? 0, what);
}

const UINT64_MAX = 2n ** 64n - 1n;
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * A UInt64Value cost: any whole number to 2^64 - 1, as text (proto3 JSON's form for 64-bit
 * integers, read exactly) or as a number (JSON's, and the gRPC loader's: past 2^53 the nearest
 * double, so 2^64 stands for 2^64 - 1). A cost past 2^53 - 1 is read as 2^53 - 1, which is past
 * every capacity core counts (limit × window ≤ 2^49): it is refused as one that can never pass,
 * charging nothing, as any cost above its rule's capacity is. Refusing it as a bad request
 * instead would let it through Envoy, which passes a call the service fails by default.
 */
function uint64Cost(value: unknown, what: string): number {
  // 2^64 - 1 has 20 digits: longer text, leading zeros aside, is past it, and is refused before
  // `BigInt`, whose time grows faster than the text (a million digits took 120 ms).
  if (typeof value === 'string' && /^\d+$/.test(value) && value.replace(/^0+/, '').length <= 20) {
    const exact = BigInt(value);
    if (exact <= UINT64_MAX) return Number(exact > MAX_SAFE ? MAX_SAFE : exact);
  } else if (typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= 2 ** 64) {
    return Math.min(value, Number.MAX_SAFE_INTEGER);
  }
  return badRequest(`${what} must be a whole number from 0 to ${UINT64_MAX}`);
}

function toOverride(item: unknown, where: string): NonNullable<DescriptorCall['limit']> {
  const { requestsPerUnit, unit } = record(item, where);
  // 0 blocks the descriptor, as a rule of 0 does: envoyproxy/ratelimit refuses every call.
  const count = wholeNumber(requestsPerUnit ?? 0, `\`${where}.requests_per_unit\``, UINT32_MAX);
  if (typeof unit !== 'string' || !overrideUnits.includes(unit))
    badRequest(`\`${where}.unit\` must be one of ${overrideUnits.join(', ')}`);
  const known = unit as Exclude<OverrideUnit, 'UNKNOWN'>;
  // envoyproxy/ratelimit takes any uint32 per unit; past core's bound on limit × window a
  // limiter cannot count it exactly, so the request is refused as bad rather than failing as
  // the service's fault.
  const most = Math.floor(MAX_UNITS / overrideWindowMs(known));
  if (count > most)
    badRequest(
      `\`${where}\` of ${count} per ${unit} is more than a limiter counts exactly: at most ${most} per ${unit}`,
    );
  return { requestsPerUnit: count, unit: known };
}

function wholeNumber(value: unknown, what: string, max: number): number {
  const number = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
  if (typeof number !== 'number' || !Number.isSafeInteger(number) || number < 0 || number > max)
    badRequest(`${what} must be a whole number from 0 to ${max}`);
  return number;
}

function record(value: unknown, what: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) badRequest(`${what} must be an object`);
  return value as Record<string, unknown>;
}
