import { isSluiceError, type PolicyOptions, toPolicy } from '@sluice/core';
import { isSeq, type Node } from 'yaml';
import { resolved } from './aliases.js';
import { coreVerdict } from './errors.js';
import { type Field, fieldsOf, flagOf, type Reader, required, textOf, uint32Of, withValue } from './reader.js';
import type { RateLimitUnit, Rule } from './types.js';

const RATE_LIMIT_KEYS = ['unit', 'requests_per_unit', 'unlimited', 'name', 'replaces'] as const;

/** envoyproxy/ratelimit's unit lengths: a month is 30 days and a year 365, as there. */
export const UNIT_MS: Readonly<Record<RateLimitUnit, number>> = {
  second: 1_000,
  minute: 60_000,
  hour: 3_600_000,
  day: 86_400_000,
  week: 604_800_000,
  month: 2_592_000_000,
  year: 31_536_000_000,
};

/** What core accepts as a policy name; other `rate_limit.name`s still work for `replaces`. */
const policyNamePattern = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export interface ReadRateLimit {
  readonly name: string | undefined;
  readonly unlimited: boolean;
  readonly replaces: readonly string[];
  readonly limit: Rule['rateLimit'];
  /** The same limit as a core policy: a fixed window aligned to the epoch, as envoyproxy/ratelimit counts. */
  readonly policy: PolicyOptions | undefined;
}

export function readRateLimit(reader: Reader, field: Field): ReadRateLimit | undefined {
  const fields = fieldsOf(reader, field.value, RATE_LIMIT_KEYS, '`rate_limit`');
  if (fields === undefined) return undefined;
  const nameField = fields.get('name');
  const name = nameField === undefined ? undefined : textOf(reader, nameField, '`rate_limit.name`');
  const unlimited = flagOf(reader, fields.get('unlimited'), '`rate_limit.unlimited`');
  const replaces = readReplaces(reader, withValue(fields.get('replaces')), name);
  const unitField = fields.get('unit');
  if (unlimited) {
    // envoyproxy/ratelimit refuses only a unit it knows beside `unlimited`: an empty one, or
    // `unknown` (the protocol's UNSPECIFIED), means no unit, and it loads.
    const unit = unitField && textOf(reader, unitField, '`rate_limit.unit`');
    if (unit !== undefined && Object.hasOwn(UNIT_MS, unit.toLowerCase())) {
      reader.report(
        unitField?.key,
        'ERR_SLUICE_RULES_CONFLICT',
        '`rate_limit.unit` cannot be given with `unlimited: true`.',
      );
    }
    // Unused, but envoyproxy/ratelimit decodes it as a uint32 all the same, and refuses a file
    // where it is not one.
    const countField = withValue(fields.get('requests_per_unit'));
    if (countField !== undefined) uint32Of(reader, countField, '`requests_per_unit`');
    return { name, unlimited, replaces, limit: undefined, policy: undefined };
  }
  const unit = readUnit(reader, required(reader, fields, 'unit', field.key, '`rate_limit`'));
  const countField = required(reader, fields, 'requests_per_unit', field.key, '`rate_limit`');
  const count = countField === undefined ? undefined : uint32Of(reader, countField, '`requests_per_unit`');
  if (unit === undefined || count === undefined) return undefined;
  // envoyproxy/ratelimit's README blocks an address with a limit of 0: refused, never counted.
  if (count === 0)
    return {
      name,
      unlimited,
      replaces,
      limit: { unit, requestsPerUnit: 0, windowMs: UNIT_MS[unit] },
      policy: undefined,
    };
  const policyName = name !== undefined && policyNamePattern.test(name) ? name : `per-${unit}`;
  const policy: PolicyOptions = { name: policyName, limit: count, window: UNIT_MS[unit], algorithm: 'fixed-window' };
  try {
    toPolicy(policy, 'rate_limit');
  } catch (error) {
    if (!isSluiceError(error)) throw error;
    // Core keeps limit × window exact in a double: 2^49, some 17,000 a year or 6.5 million a day.
    reader.report(
      countField?.value,
      'ERR_SLUICE_RULES_INVALID_POLICY',
      `\`requests_per_unit\` ${count} per ${unit} is beyond what a limiter can count: ${coreVerdict(error)}`,
    );
    return undefined;
  }
  return { name, unlimited, replaces, limit: { unit, requestsPerUnit: count, windowMs: UNIT_MS[unit] }, policy };
}

function readUnit(reader: Reader, field: Field | undefined): RateLimitUnit | undefined {
  if (field === undefined) return undefined;
  const text = textOf(reader, field, '`rate_limit.unit`');
  if (text === undefined) return undefined;
  const unit = text.toLowerCase();
  // Own names only: `constructor` is in every object.
  if (Object.hasOwn(UNIT_MS, unit)) return unit as RateLimitUnit;
  const units = Object.keys(UNIT_MS).join(', ');
  reader.report(
    field.value,
    'ERR_SLUICE_RULES_INVALID_VALUE',
    `\`rate_limit.unit\` must be one of ${units}; received ${JSON.stringify(text)}.`,
  );
  return undefined;
}

function readReplaces(reader: Reader, field: Field | undefined, ownName: string | undefined): string[] {
  if (field === undefined) return [];
  const list = field.value;
  if (!isSeq(list)) {
    reader.report(list ?? field.key, 'ERR_SLUICE_RULES_INVALID_VALUE', '`replaces` must be a list of `{ name }`.');
    return [];
  }
  const names: string[] = [];
  for (const item of list.items as (Node | null)[]) {
    const fields = fieldsOf(reader, resolved(reader, item), ['name'], 'an entry of `replaces`');
    const nameField = fields && required(reader, fields, 'name', item, 'An entry of `replaces`');
    const name = nameField && textOf(reader, nameField, '`replaces[].name`');
    if (name === undefined) continue;
    if (name === '')
      reader.report(nameField?.value, 'ERR_SLUICE_RULES_INVALID_VALUE', '`replaces[].name` must not be empty.');
    else if (name === ownName)
      reader.report(nameField?.value, 'ERR_SLUICE_RULES_INVALID_VALUE', 'A rate limit cannot replace itself.');
    else names.push(name);
  }
  return names;
}
