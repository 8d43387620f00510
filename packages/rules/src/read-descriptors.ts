import { createHash } from 'node:crypto';
import { isMap, isNode, isSeq, type Node } from 'yaml';
import { resolved } from './aliases.js';
import { createDescriptorWalk, type DescriptorWalk } from './descriptor-walk.js';
import { MAX_NESTING } from './nesting.js';
import { plainOf } from './plain-values.js';
import { readPolicies, readThrottle } from './read-policies.js';
import { readRateLimit } from './read-rate-limit.js';
import { type Field, fieldsOf, flagOf, isNull, type Reader, required, textOf, withValue } from './reader.js';
import type { Rule, RulePathEntry } from './types.js';
import { isWildcard } from './wildcard.js';

const DESCRIPTOR_KEYS = [
  'key',
  'value',
  'rate_limit',
  'descriptors',
  'shadow_mode',
  'quota_mode',
  'detailed_metric',
  'value_to_metric',
  'share_threshold',
  'metadata',
  // sluice's own
  'policies',
  'throttle',
] as const;

/** A descriptor of the document, ready to be compiled into the matching tree. */
export interface TreeNode {
  readonly key: string;
  /** `undefined` for a bare key (and for `value: ""`, as in envoyproxy/ratelimit). */
  readonly value: string | undefined;
  readonly rule: Rule | undefined;
  /**
   * `share_threshold`: every value the wildcard matches counts as one, for this descriptor's
   * rule and for those below it (a wildcard with no limit of its own may group descriptors).
   */
  readonly shareThreshold: boolean;
  readonly children: readonly TreeNode[];
}

/**
 * Metadata and core's options (a policy's `queue`), frozen all the way down like the rest of a
 * rule: rules that share a value through a YAML alias share one object. A value is frozen only
 * after all it holds, so a frozen one (metadata that descriptors share through an alias) is
 * left as it is, not walked again for each descriptor.
 */
function frozen<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    for (const inner of Object.values(value)) frozen(inner);
    Object.freeze(value);
  }
  return value;
}

/** The namespace of a rule: from where it sits, never from what it limits. */
const ruleId = (domain: string, path: readonly RulePathEntry[]): string =>
  `r.${createHash('sha256')
    .update(JSON.stringify([domain, path]))
    .digest('base64url')
    .slice(0, 16)}`;

/** The most levels of descriptors a rule's path may have: more than any text can nest. */
const MAX_DESCRIPTOR_LEVELS = MAX_NESTING / 2;

interface Context {
  readonly reader: Reader;
  readonly domain: string;
  readonly walk: DescriptorWalk;
}

/** Reads a document's `descriptors`, each alias followed, within the document's budget of descriptors. */
export function readDescriptorTree(reader: Reader, field: Field, domain: string): TreeNode[] {
  return readDescriptors({ reader, domain, walk: createDescriptorWalk(reader) }, field, []);
}

/** Reads a `descriptors` list; a key and value given twice at one level is a duplicate, as there. */
function readDescriptors(context: Context, field: Field, path: readonly RulePathEntry[]): TreeNode[] {
  const { reader, walk } = context;
  const list = field.value;
  if (isNull(list)) return [];
  if (!isSeq(list)) {
    reader.report(list, 'ERR_SLUICE_RULES_INVALID_VALUE', '`descriptors` must be a list of descriptors.');
    return [];
  }
  // Aliases let descriptors nest deeper than any text does (`nesting.ts` bounds that at some 63
  // levels): each level is a call, and some 2,000 overflowed the stack.
  if (path.length === MAX_DESCRIPTOR_LEVELS) {
    const message = `Descriptors nest more than ${MAX_DESCRIPTOR_LEVELS} levels deep.`;
    reader.report(field.written, 'ERR_SLUICE_RULES_INVALID_VALUE', message);
    return [];
  }
  if (!walk.enter(list, field.written, 'list')) return [];
  const seen = new Set<string>();
  const nodes: TreeNode[] = [];
  for (const item of list.items as (Node | null)[]) {
    const map = resolved(reader, item);
    if (isNode(map) && !walk.enter(map, item, 'descriptor')) continue;
    const node = readDescriptor(context, item, path);
    if (isNode(map)) walk.leave(map);
    if (node === undefined) continue;
    const composite = JSON.stringify([node.key, node.value ?? null]);
    if (seen.has(composite)) {
      const shown =
        node.value === undefined
          ? `key ${JSON.stringify(node.key)}`
          : `key ${JSON.stringify(node.key)} with value ${JSON.stringify(node.value)}`;
      reader.report(item, 'ERR_SLUICE_RULES_DUPLICATE', `A descriptor with ${shown} is already defined at this level.`);
      continue;
    }
    seen.add(composite);
    nodes.push(node);
  }
  walk.leave(list);
  return nodes;
}

/**
 * Where to report a problem of `item`'s at `node`: `node` when it is a key written in `item`'s
 * own mapping, else `item`. A key a merge brought is written in the mapping merged, which
 * several descriptors may share, and one of a nested descriptor is that descriptor's: each
 * descriptor's problem is reported at it, not once at another's.
 */
function reportedAt(item: Node | null, node: Node | null | undefined): Node | null | undefined {
  return isMap(item) && item.items.some((pair) => pair.key === node) ? node : item;
}

function readDescriptor(context: Context, item: Node | null, parent: readonly RulePathEntry[]): TreeNode | undefined {
  const { reader, domain } = context;
  const fields = fieldsOf(reader, item, DESCRIPTOR_KEYS, 'a descriptor');
  if (fields === undefined) return undefined;
  const keyField = required(reader, fields, 'key', item, 'A descriptor');
  const key = keyField && textOf(reader, keyField, '`key`');
  if (keyField !== undefined && key === '')
    reader.report(keyField.value, 'ERR_SLUICE_RULES_INVALID_VALUE', '`key` must not be empty.');
  const valueField = fields.get('value');
  const written = valueField && textOf(reader, valueField, '`value`');
  const value = written === '' ? undefined : written;
  const entry: RulePathEntry = value === undefined ? { key: key ?? '' } : { key: key ?? '', value };
  const path = Object.freeze([...parent, Object.freeze(entry)]);
  const shareThreshold = flagOf(reader, fields.get('share_threshold'), '`share_threshold`');
  if (shareThreshold && (value === undefined || !isWildcard(value))) {
    reader.report(
      reportedAt(item, fields.get('share_threshold')?.key),
      'ERR_SLUICE_RULES_CONFLICT',
      '`share_threshold` needs a wildcard `value`, one ending in `*`.',
    );
  }
  const rule = readRule(reader, fields, item, domain, path, shareThreshold);
  const below = fields.get('descriptors');
  const children = below === undefined ? [] : readDescriptors(context, below, path);
  if (key === undefined || key === '') return undefined;
  return { key, value, rule, shareThreshold, children };
}

function readRule(
  reader: Reader,
  fields: Map<string, Field>,
  at: Node | null,
  domain: string,
  path: readonly RulePathEntry[],
  shareThreshold: boolean,
): Rule | undefined {
  const flag = (name: string): boolean => flagOf(reader, fields.get(name), `\`${name}\``);
  const shadowMode = flag('shadow_mode');
  const quotaMode = flag('quota_mode');
  const detailedMetric = flag('detailed_metric');
  const valueToMetric = flag('value_to_metric');
  const rateLimitField = withValue(fields.get('rate_limit'));
  const policiesField = fields.get('policies');
  const throttleField = fields.get('throttle');
  if (rateLimitField !== undefined && policiesField !== undefined) {
    reader.report(
      reportedAt(at, policiesField.key),
      'ERR_SLUICE_RULES_CONFLICT',
      'A descriptor has either `rate_limit` or `policies`, not both.',
    );
    return undefined;
  }
  if (throttleField !== undefined && rateLimitField === undefined && policiesField === undefined) {
    reader.report(
      reportedAt(at, throttleField.key),
      'ERR_SLUICE_RULES_CONFLICT',
      '`throttle` needs `rate_limit` or `policies` beside it.',
    );
  }
  if (throttleField !== undefined && shadowMode) {
    reader.report(
      reportedAt(at, throttleField.key),
      'ERR_SLUICE_RULES_CONFLICT',
      '`throttle` cannot be given with `shadow_mode: true`; use `throttle: { mode: shadow }`.',
    );
  }
  const rateLimit = rateLimitField && readRateLimit(reader, rateLimitField);
  const policies = policiesField && readPolicies(reader, policiesField);
  const throttle = throttleField && readThrottle(reader, throttleField);
  const metadataField = fields.get('metadata');
  const metadata = metadataField && plainOf(reader, metadataField.value, '`metadata`');
  if (rateLimit === undefined && policies === undefined) return undefined;
  return Object.freeze({
    id: ruleId(domain, path),
    domain,
    path,
    name: rateLimit?.name,
    policies: frozen(policies ?? (rateLimit?.policy ? [rateLimit.policy] : [])),
    throttle: shadowMode ? Object.freeze({ mode: 'shadow' as const }) : frozen(throttle),
    unlimited: rateLimit?.unlimited ?? false,
    blocked: rateLimit?.limit?.requestsPerUnit === 0,
    shadowMode,
    quotaMode,
    detailedMetric,
    valueToMetric,
    shareThreshold,
    replaces: Object.freeze(rateLimit?.replaces ?? []),
    rateLimit: rateLimit?.limit && Object.freeze(rateLimit.limit),
    metadata: frozen(metadata),
    location: reader.locate(at),
  });
}
