import { closestName, type SluiceErrorCode } from '@sluice/core';
import { type Document, isMap, isScalar, type LineCounter, type Node, type Scalar } from 'yaml';
import { pairsOf, resolved } from './aliases.js';
import { isAmbiguousNumber } from './ambiguous-numbers.js';
import type { RuleProblem } from './errors.js';

/** Where a rule or a problem is in its file; lines and columns count from 1. */
export interface Location {
  readonly source: string;
  readonly line: number;
  readonly column: number;
}

/** Reads one YAML or JSON document, collecting every problem instead of stopping at the first. */
export interface Reader {
  readonly source: string;
  readonly doc: Document.Parsed;
  readonly problems: RuleProblem[];
  locate(node: Node | null | undefined, fallback?: Node): Location;
  report(node: Node | null | undefined, code: SluiceErrorCode, message: string): void;
}

export function createReader(
  source: string,
  doc: Document.Parsed,
  lines: LineCounter,
  problems: RuleProblem[],
): Reader {
  const locate = (node: Node | null | undefined): Location => {
    const offset = node?.range?.[0] ?? doc.contents?.range?.[0] ?? 0;
    const { line, col } = lines.linePos(offset);
    return { source, line, column: col };
  };
  // A mapping merged into several others (`<<: *base`) reports its own problems once: each
  // problem reported so far, by where and what (a set, as a document may hold thousands).
  const reported = new Set<string>();
  return {
    source,
    doc,
    problems,
    locate,
    report(node, code, message) {
      const at = locate(node);
      const problem = `${at.source}:${at.line}:${at.column} ${code} ${message}`;
      if (reported.has(problem)) return;
      reported.add(problem);
      problems.push({ code, message, ...at });
    },
  };
}

export interface Field {
  readonly key: Scalar;
  /** The value, an alias (`*name`) followed to what it stands for. */
  readonly value: Node | null;
  /** The value as written: the alias itself where there is one, so a problem with the alias is reported there. */
  readonly written: Node | null;
}

/**
 * The fields of a mapping by name. A key outside `allowed` is reported with the closest
 * known one (the seed's `request_per_unit` → `requests_per_unit`); envoyproxy/ratelimit
 * ignores a known key in the wrong place, sluice reports it too, since it is always a mistake.
 */
export function fieldsOf(
  reader: Reader,
  node: Node | null | undefined,
  allowed: readonly string[],
  what: string,
): Map<string, Field> | undefined {
  const map = resolved(reader, node);
  if (!isMap(map)) {
    reader.report(node, 'ERR_SLUICE_RULES_INVALID_VALUE', `${what} must be a mapping of keys to values.`);
    return undefined;
  }
  const fields = new Map<string, Field>();
  for (const pair of pairsOf(reader, map)) {
    const key = pair.key as Node | null;
    if (!isScalar(key) || typeof key.value !== 'string') {
      reader.report(key ?? map, 'ERR_SLUICE_RULES_INVALID_VALUE', `Keys of ${what} must be strings.`);
      continue;
    }
    if (!allowed.includes(key.value)) {
      const hint = closestName(key.value, allowed);
      const suggestion = hint !== undefined && allowed.includes(hint) ? `; did you mean \`${hint}\`?` : '.';
      const known = allowed.map((k) => `\`${k}\``).join(', ');
      reader.report(
        key,
        'ERR_SLUICE_RULES_UNKNOWN_KEY',
        `Unknown key \`${key.value}\` in ${what}${suggestion} Known keys: ${known}.`,
      );
      continue;
    }
    // A key written beside a merge key overrides the merged one (YAML duplicates are caught earlier).
    if (fields.has(key.value)) continue;
    const written = (pair.value as Node | null) ?? null;
    fields.set(key.value, { key, value: resolved(reader, written) ?? null, written });
  }
  return fields;
}

/** A required field; its absence is reported at the mapping. */
export function required(
  reader: Reader,
  fields: Map<string, Field>,
  name: string,
  at: Node | null | undefined,
  what: string,
): Field | undefined {
  const field = fields.get(name);
  if (field === undefined) reader.report(at, 'ERR_SLUICE_RULES_MISSING_KEY', `${what} needs \`${name}\`.`);
  return field;
}

/**
 * Whether a key was written with no value (`value:`, `~`, `null`). Go's YAML decoder leaves
 * such a field at its zero value in envoyproxy/ratelimit, and the field reads so here too:
 * empty text, `false`, no descriptors.
 */
export const isNull = (node: Node | null): boolean => node === null || (isScalar(node) && node.value === null);

/**
 * A field written with a value; one written with none (`rate_limit:`) is absent, as in
 * envoyproxy/ratelimit, whose YAML decoder leaves such a field unset.
 */
export const withValue = (field: Field | undefined): Field | undefined =>
  field === undefined || isNull(field.value) ? undefined : field;

/**
 * A scalar as text. Numbers and booleans keep the text they were written with, as Go's
 * YAML decoder does for a string field in envoyproxy/ratelimit (`value: 01` stays `01`); no
 * value is empty text.
 */
export function textOf(reader: Reader, field: Field, what: string): string | undefined {
  const node = field.value;
  if (isNull(node)) return '';
  if (!isScalar(node) || typeof node.value === 'object') {
    reader.report(node ?? field.key, 'ERR_SLUICE_RULES_INVALID_VALUE', `${what} must be a string.`);
    return undefined;
  }
  if (typeof node.value === 'string') return node.value;
  return typeof node.source === 'string' ? node.source : String(node.value);
}

// YAML 1.1 booleans, which envoyproxy/ratelimit's Go decoder reads as booleans too.
const yaml11Booleans = new Map(
  ['y', 'yes', 'on', 'true', 'n', 'no', 'off', 'false'].flatMap((word, i) => {
    const value = i < 4;
    const title = word.charAt(0).toUpperCase() + word.slice(1);
    return [word, title, word.toUpperCase()].map((w): [string, boolean] => [w, value]);
  }),
);

/** What `!!bool` stands for. */
const BOOL_TAG = 'tag:yaml.org,2002:bool';

export function flagOf(reader: Reader, field: Field | undefined, what: string): boolean {
  if (field === undefined) return false;
  const node = field.value;
  if (isNull(node)) return false;
  if (isScalar(node)) {
    if (typeof node.value === 'boolean') return node.value;
    // An untagged word is a flag unquoted; one tagged `!!bool` even quoted (`!!bool "yes"`), and
    // one tagged as text (`!!str yes`) never, as the Go decoder reads them.
    const looked = node.tag === undefined ? node.type === 'PLAIN' : node.tag === BOOL_TAG;
    const word = looked && typeof node.value === 'string' ? yaml11Booleans.get(node.value) : undefined;
    if (word !== undefined) return word;
  }
  reader.report(node ?? field.key, 'ERR_SLUICE_RULES_INVALID_VALUE', `${what} must be true or false.`);
  return false;
}

/** What a node holds, for a message: text quoted (YAML 1.2 reads `1_000` as text), other scalars as written. */
function shown(node: Node | null): string {
  if (isNull(node)) return 'nothing';
  if (!isScalar(node)) return isMap(node) ? 'a mapping' : 'a list';
  return typeof node.value === 'string' ? `the text ${JSON.stringify(node.value)}` : `\`${node.source ?? node.value}\``;
}

/** A whole number from 0 to 2^32 − 1, the range of envoyproxy/ratelimit's `uint32` fields. */
export function uint32Of(reader: Reader, field: Field, what: string): number | undefined {
  const node = field.value;
  if (isAmbiguousNumber(reader, node, what)) return undefined;
  const value = isScalar(node) ? node.value : undefined;
  if (typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= 0xffff_ffff) return value;
  reader.report(
    node ?? field.key,
    'ERR_SLUICE_RULES_INVALID_VALUE',
    `${what} must be a whole number from 0 to 4294967295; received ${shown(node)}.`,
  );
  return undefined;
}
