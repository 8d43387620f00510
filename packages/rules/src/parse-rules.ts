import { Composer, type Document, isScalar, LineCounter, Parser, visit } from 'yaml';
import { reportDanglingAliases } from './aliases.js';
import { type RuleProblem, RulesError } from './errors.js';
import { MAX_NESTING, tooDeepAt } from './nesting.js';
import { checkName, checkSourceOptions } from './options.js';
import { readDescriptorTree } from './read-descriptors.js';
import { createReader, fieldsOf, type Location, type Reader, required, textOf } from './reader.js';
import { createRuleSet, type DomainRules } from './rule-set.js';
import type { RuleSet } from './types.js';

export interface ParseRulesOptions {
  /** Names the text in error messages and in `RuleSet.sources`. @default '<rules>' */
  source?: string | undefined;
}

/** A domain read from one document, with where it was declared. */
export interface ReadDomain extends DomainRules {
  readonly location: Location;
}

const NO_DOMAIN = 'The document needs `domain`.';

/**
 * Reads every YAML document of a text (JSON is YAML too); each document declares one domain.
 * Problems go to `problems`; the domains returned are those read without any.
 */
export function readDomains(text: string, source: string, problems: RuleProblem[]): ReadDomain[] {
  const lines = new LineCounter();
  const tokens = Array.from(new Parser(lines.addNewLine).parse(text));
  const deep = tooDeepAt(tokens);
  if (deep !== undefined) {
    const { line, col } = lines.linePos(deep);
    const message = `The document nests collections more than ${MAX_NESTING} deep.`;
    problems.push({ code: 'ERR_SLUICE_RULES_INVALID_VALUE', message, source, line, column: col });
    return [];
  }
  // `merge`: envoyproxy/ratelimit's Go decoder resolves `<<: *base`, so a file using it means the same here.
  // `schema`: the YAML 1.2 core schema even under a `%YAML 1.1` directive, so `1:30` or `1_000` are
  // text there too, and refused as such, as the docs say.
  // `resolveKnownTags`: a `%YAML 1.1` directive turns it off, and `!!binary` or `!!set` would then
  // read as text or a mapping, past the refusal of values that are not plain data.
  // `uniqueKeys`: checked in one pass below (`repeatedKeys`); the yaml package compares each key
  // with every one before it, and a mapping of 50,000 keys took 26 s.
  const composer = new Composer({ merge: true, schema: 'core', resolveKnownTags: true, uniqueKeys: false });
  const docs = Array.from(composer.compose(tokens));
  if (docs.length === 0) {
    // An empty or comment-only text is most often a file caught half-written: never a set without limits.
    problems.push({ code: 'ERR_SLUICE_RULES_MISSING_KEY', message: NO_DOMAIN, source, line: 1, column: 1 });
    return [];
  }
  const domains: ReadDomain[] = [];
  let readOne = false;
  for (const doc of docs) {
    const empty = doc.contents === null || (isScalar(doc.contents) && doc.contents.value === null);
    // A trailing `---` ends in an empty document: envoyproxy/ratelimit reads a file's first
    // document only and never sees it, so it means nothing here either.
    if (empty && readOne && doc.errors.length === 0) continue;
    readOne = true;
    const reader = createReader(source, doc, lines, problems);
    const repeated = repeatedKeys(reader, doc);
    if (doc.errors.length > 0) {
      for (const error of doc.errors) {
        const at = lines.linePos(error.pos[0]);
        const code = error.code === 'DUPLICATE_KEY' ? 'ERR_SLUICE_RULES_DUPLICATE' : 'ERR_SLUICE_RULES_SYNTAX';
        const message = error.message.split('\n')[0] as string;
        problems.push({ code, message: `${message}.`.replace(/\.\.$/, '.'), source, line: at.line, column: at.col });
      }
      continue;
    }
    const dangling = reportDanglingAliases(reader);
    if (repeated || dangling) continue;
    // An empty document (`null`, or nothing before a `---`) has no mapping to find `domain` in.
    if (empty) {
      reader.report(doc.contents, 'ERR_SLUICE_RULES_MISSING_KEY', NO_DOMAIN);
      continue;
    }
    const fields = fieldsOf(reader, doc.contents, ['domain', 'descriptors'], 'the document');
    if (fields === undefined) continue;
    const domainField = required(reader, fields, 'domain', doc.contents, 'The document');
    const domain = domainField && textOf(reader, domainField, '`domain`');
    if (domain === '')
      reader.report(domainField?.value, 'ERR_SLUICE_RULES_INVALID_VALUE', '`domain` must not be empty.');
    const before = problems.length;
    const descriptors = fields.get('descriptors');
    const nodes = descriptors === undefined ? [] : readDescriptorTree(reader, descriptors, domain ?? '');
    if (domain && problems.length === before)
      domains.push({ domain, nodes, location: reader.locate(domainField?.value) });
  }
  return domains;
}

/**
 * Reports each key written twice in one mapping, as the yaml package's own check would (scalar
 * keys of the same value; a merge key `<<` is never the same as another), each mapping read once.
 */
function repeatedKeys(reader: Reader, doc: Document.Parsed): boolean {
  let found = false;
  visit(doc, {
    Map(_key, map) {
      const seen = new Set<unknown>();
      for (const { key } of map.items) {
        // NaN is no key twice: YAML compares keys by value, and NaN equals nothing.
        if (!isScalar(key) || Number.isNaN(key.value)) continue;
        if (!seen.has(key.value)) seen.add(key.value);
        else {
          reader.report(key, 'ERR_SLUICE_RULES_DUPLICATE', 'Map keys must be unique.');
          found = true;
        }
      }
    },
  });
  return found;
}

/** A domain declared twice (in one text or across the files of a directory) is an error, as there. */
export function checkDistinct(domains: readonly ReadDomain[], problems: RuleProblem[]): void {
  const first = new Map<string, Location>();
  for (const { domain, location } of domains) {
    const seen = first.get(domain);
    if (seen === undefined) first.set(domain, location);
    else
      problems.push({
        code: 'ERR_SLUICE_RULES_DUPLICATE',
        message: `Domain ${JSON.stringify(domain)} is already declared at ${seen.source}:${seen.line}:${seen.column}.`,
        ...location,
      });
  }
}

/**
 * Parses a rules document (YAML or JSON) into an immutable rule set. Throws a `RulesError`
 * listing every problem, each with a stable `ERR_SLUICE_RULES_*` code, file, line and column.
 *
 * @example
 * const rules = parseRules(readFileSync('rules.yaml', 'utf8'), { source: 'rules.yaml' });
 * rules.match('edge', [[{ key: 'remote_address', value: '203.0.113.7' }]]);
 */
export function parseRules(text: string, options: ParseRulesOptions = {}): RuleSet {
  checkSourceOptions(options, 'parseRules', ['source']);
  if (options.source !== undefined) checkName(options.source, 'source');
  const source = options.source ?? '<rules>';
  if (typeof text !== 'string') {
    throw new RulesError([
      {
        code: 'ERR_SLUICE_RULES_INVALID_VALUE',
        message: 'The rules must be given as text.',
        source,
        line: 1,
        column: 1,
      },
    ]);
  }
  const problems: RuleProblem[] = [];
  const domains = readDomains(text, source, problems);
  checkDistinct(domains, problems);
  if (problems.length > 0) throw new RulesError(problems);
  return createRuleSet(domains, [source]);
}
