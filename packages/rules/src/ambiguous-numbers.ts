import { isMap, isScalar, isSeq, type Node } from 'yaml';
import { pairsOf, resolved } from './aliases.js';
import type { Reader } from './reader.js';

// YAML 1.1, which envoyproxy/ratelimit's Go decoder (gopkg.in/yaml.v2) reads, takes a whole
// number written with a leading zero as octal (`010` is 8); YAML 1.2, read here, as decimal
// (10). Such a number is refused rather than guessed. The other forms the two read apart
// (`1_000`, `0b101`, `+0x1F`, YAML 1.1's base 60 `1:30`) are text in YAML 1.2, which no
// numeric field takes; `0o10`, `0x1F`, `+5` and `1e3` are the same number in both.
const leadingZero = /^[-+]?0[0-9]+$/;

/** Whether `node` is a number written with a leading zero; reported at it when it is. */
export function isAmbiguousNumber(reader: Reader, node: Node | null, what: string): boolean {
  if (!isScalar(node) || typeof node.value !== 'number' || !leadingZero.test(node.source ?? '')) return false;
  reader.report(
    node,
    'ERR_SLUICE_RULES_INVALID_VALUE',
    `${what} is written \`${node.source}\`: YAML 1.1 (envoyproxy/ratelimit) reads a leading zero as octal, YAML 1.2 as decimal; write it without the leading zero.`,
  );
  return true;
}

/** Whether any number under `node` (core's options, aliases followed) is one with a leading zero; each is reported. */
export function hasAmbiguousNumbers(reader: Reader, node: Node | null, what: string, seen = new Set<Node>()): boolean {
  const target = resolved(reader, node) ?? null;
  if (target === null || seen.has(target)) return false;
  seen.add(target);
  if (isScalar(target)) return isAmbiguousNumber(reader, target, what);
  const values = isMap(target)
    ? pairsOf(reader, target).map((pair) => pair.value as Node | null)
    : isSeq(target)
      ? (target.items as (Node | null)[])
      : [];
  let found = false;
  for (const value of values) found = hasAmbiguousNumbers(reader, value, what, seen) || found;
  return found;
}
