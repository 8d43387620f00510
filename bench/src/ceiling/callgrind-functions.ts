import { readFileSync } from 'node:fs';

/** A function's own costs in one callgrind dump, event by event, per counted unit. */
export type FunctionCosts = Map<string, number[]>;

/** One compiled function's code, as node's `--perf-basic-prof` map lists it. */
interface CodeRange {
  readonly start: number;
  readonly end: number;
  readonly name: string;
  /** Its line in the map: V8 reuses the addresses of code it freed, and a later line holds them now. */
  readonly line: number;
}

/** The map's ranges by start, and the longest: how far back a range holding an address can start. */
interface PerfMap {
  readonly ranges: readonly CodeRange[];
  readonly longest: number;
}

/**
 * Each function's own (exclusive) costs in a callgrind dump, divided by `units`, the
 * events in the dump's order (its `events:` line, returned beside them). Code V8 compiled
 * has no symbol: callgrind names it by its address, which `perfMap` (the file node writes
 * with `--perf-basic-prof`, `/tmp/perf-<pid>.map`) turns into the function's name and
 * source position. Costs of the same name are summed (a function compiled twice, callgrind's
 * `'2` for a recursive call).
 */
export function functionCosts(
  dump: string,
  perfMap: string,
  units: number,
): { events: string[]; costs: FunctionCosts } {
  const codeMap = readPerfMap(perfMap);
  const names = new Map<string, string>();
  // Callgrind names a function in full once, `(id) name`, and by `(id)` after that.
  const nameOf = (spec: string): string => {
    const match = /^\((\d+)\)(?: (.*))?$/.exec(spec);
    if (match === null) return spec;
    const [, id = '', name] = match;
    if (name !== undefined) names.set(id, name);
    return names.get(id) ?? spec;
  };
  let events: string[] = [];
  let positions = 1;
  let current: number[] | undefined;
  let callCost = false;
  const costs: FunctionCosts = new Map();
  for (const line of readFileSync(dump, 'utf8').split('\n')) {
    if (line.startsWith('positions:')) positions = line.split(' ').length - 1;
    else if (line.startsWith('events:')) events = line.split(' ').slice(1);
    else if (line.startsWith('fn=')) {
      const name = named(nameOf(line.slice(3)), codeMap);
      current = costs.get(name) ?? [];
      costs.set(name, current);
    } else if (line.startsWith('cfn=')) nameOf(line.slice(4));
    // The line after `calls=` is what the call cost, inclusive: not the caller's own.
    else if (line.startsWith('calls=')) callCost = true;
    else if (/^[0-9+*-]/.test(line) && current !== undefined) {
      if (callCost) callCost = false;
      else {
        const values = line.split(' ').slice(positions);
        for (let i = 0; i < values.length; i++) current[i] = (current[i] ?? 0) + Number(values[i]) / units;
      }
    }
  }
  return { events, costs };
}

function readPerfMap(path: string): PerfMap {
  const ranges: CodeRange[] = [];
  let longest = 0;
  for (const text of readFileSync(path, 'utf8').split('\n')) {
    const [start, size, ...name] = text.split(' ');
    if (start === undefined || size === undefined || name.length === 0) continue;
    const from = Number.parseInt(start, 16);
    const length = Number.parseInt(size, 16);
    longest = Math.max(longest, length);
    ranges.push({ start: from, end: from + length, name: shortened(name.join(' ')), line: ranges.length });
  }
  return { ranges: ranges.sort((a, b) => a.start - b.start), longest };
}

/**
 * A callgrind function name, compiled code named by the perf map: of the ranges holding the
 * address, the one the map lists last. V8 frees code and compiles other code where it was, so
 * a map lists ranges that overlap; a server's map named the code of a content-type parser
 * compiled late by the module lexer that had run at start-up where it now sits.
 */
function named(name: string, { ranges, longest }: PerfMap): string {
  const address = /^0x([0-9a-f]+)/.exec(name);
  if (address === null) return withoutParameters(name.replace(/'\d+$/, ''));
  const at = Number.parseInt(address[1] as string, 16);
  // The last range that starts at or before the address; any holding it starts within `longest` before.
  let low = 0;
  let high = ranges.length - 1;
  while (low <= high) {
    const mid = (low + high) >> 1;
    if ((ranges[mid] as CodeRange).start <= at) low = mid + 1;
    else high = mid - 1;
  }
  let holder: CodeRange | undefined;
  for (let i = high; i >= 0 && (ranges[i] as CodeRange).start > at - longest; i--) {
    const range = ranges[i] as CodeRange;
    if (at < range.end && (holder === undefined || range.line > holder.line)) holder = range;
  }
  return holder?.name ?? 'compiled code not in the perf map';
}

/**
 * `JS:*write file:///…/packages/core/dist/http/headers/index.js:54:14` as `write
 * core/dist/http/headers/index.js:54:14`: the tier mark dropped (one function's code of every
 * tier sums together), paths from the package, an anonymous function by its place alone.
 */
const shortened = (name: string): string =>
  name
    .replace(/^JS:[*~^+]?/, '')
    .replace(/file:\/\/\S*\/(packages|bench)\//, (_, tree: string) => (tree === 'bench' ? 'bench/' : ''))
    .replace(/\S*\/node_modules\/\.pnpm\/[^/]+\/node_modules\//, '')
    .trim();

/** A C++ symbol without its parameter list (and qualifiers after it), which can be longer than the rest. */
function withoutParameters(symbol: string): string {
  const close = symbol.lastIndexOf(')');
  if (close < 0) return symbol;
  let depth = 0;
  for (let i = close; i >= 0; i--) {
    if (symbol[i] === ')') depth++;
    else if (symbol[i] === '(' && --depth === 0) return symbol.slice(0, i);
  }
  return symbol;
}
