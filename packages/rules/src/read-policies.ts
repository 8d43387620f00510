import {
  formatMs,
  isSluiceError,
  POLICY_OPTION_NAMES,
  type PolicyOptions,
  type Throttle,
  toPolicies,
  toPolicy,
  toThrottle,
} from '@sluice/core';
import { isMap, isSeq, type Node } from 'yaml';
import { hasAmbiguousNumbers } from './ambiguous-numbers.js';
import { coreVerdict } from './errors.js';
import { plainOf } from './plain-values.js';
import { type Field, fieldsOf, type Reader } from './reader.js';

const THROTTLE_KEYS = ['mode', 'overagePercent', 'maxOveragePercent'] as const;

/**
 * Core's options from the fields read, so a key a merge key (`<<: *base`) brings in counts as
 * one written; `undefined` when a number among them is written with a leading zero.
 */
function optionsOf(reader: Reader, fields: Map<string, Field>, what: string): Record<string, unknown> | undefined {
  let ambiguous = false;
  for (const [name, field] of fields)
    ambiguous = hasAmbiguousNumbers(reader, field.value, `\`${what}.${name}\``) || ambiguous;
  if (ambiguous) return undefined;
  return Object.fromEntries(
    [...fields].map(([name, field]) => [name, plainOf(reader, field.value, `\`${what}.${name}\``)]),
  );
}

/**
 * Reports core's verdict at the option it names (core says "Option `policies[0].limit` …"),
 * so a rule can never mean something a limiter option could not.
 */
function reportCore(reader: Reader, error: unknown, root: Node, prefix: string): void {
  if (!isSluiceError(error)) throw error;
  const named = /`([^`]+)`/.exec(error.message)?.[1] ?? '';
  const path = named.startsWith(`${prefix}.`) ? named.slice(prefix.length + 1).split('.') : [];
  let node: Node = root;
  for (const segment of path) {
    const next = isMap(node) ? (node.get(segment, true) as Node | undefined) : undefined;
    if (next === undefined) break;
    node = next;
  }
  reader.report(node, 'ERR_SLUICE_RULES_INVALID_POLICY', coreVerdict(error));
}

/**
 * `policies`: core's policy options. A policy without a `name` is named after its window
 * (`per-1m`), never after its limit, so a reload that changes the limit keeps the counts.
 */
export function readPolicies(reader: Reader, field: Field): PolicyOptions[] | undefined {
  const list = field.value;
  if (!isSeq(list) || list.items.length === 0) {
    reader.report(
      list ?? field.key,
      'ERR_SLUICE_RULES_INVALID_VALUE',
      '`policies` must be a non-empty list of policies.',
    );
    return undefined;
  }
  const policies: PolicyOptions[] = [];
  let valid = true;
  list.items.forEach((item, i) => {
    const what = `policies[${i}]`;
    const before = reader.problems.length;
    const fields = fieldsOf(reader, item as Node, POLICY_OPTION_NAMES, `\`${what}\``);
    if (fields === undefined || reader.problems.length > before) {
      valid = false;
      return;
    }
    const options = optionsOf(reader, fields, what) as PolicyOptions | undefined;
    if (options === undefined) {
      valid = false;
      return;
    }
    try {
      const policy = toPolicy(options, what);
      policies.push(options.name === undefined ? { ...options, name: `per-${formatMs(policy.windowMs)}` } : options);
    } catch (error) {
      reportCore(reader, error, item as Node, what);
      valid = false;
    }
  });
  if (!valid) return undefined;
  try {
    toPolicies(policies);
  } catch (error) {
    reportCore(reader, error, list, 'policies');
    return undefined;
  }
  return policies;
}

/** `throttle`: core's throttling modes, except an elastic `load` probe, which only code can give. */
export function readThrottle(reader: Reader, field: Field): Throttle | undefined {
  const before = reader.problems.length;
  const fields = fieldsOf(reader, field.value, THROTTLE_KEYS, '`throttle`');
  if (fields === undefined || reader.problems.length > before) return undefined;
  const options = optionsOf(reader, fields, 'throttle');
  if (options === undefined) return undefined;
  try {
    return toThrottle(options);
  } catch (error) {
    reportCore(reader, error, field.value as Node, 'throttle');
    return undefined;
  }
}
