import { isUtf8 } from 'node:buffer';
import {
  closeSync,
  constants,
  type Dirent,
  fstatSync,
  openSync,
  readdirSync,
  readFileSync,
  type Stats,
  statSync,
} from 'node:fs';
import { open, readdir, stat } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { type RuleProblem, RulesError, readProblem } from './errors.js';
import { checkDistinct, type ReadDomain, readDomains } from './parse-rules.js';
import type { RulesText } from './reloader.js';
import { createRuleSet } from './rule-set.js';
import type { RuleSet } from './types.js';

const RULE_FILE_EXTENSIONS = new Set(['.yaml', '.yml', '.json']);

/**
 * What `loadRules` reads at a path: its rules files and the subdirectories walked to find them,
 * and the entries it leaves out for their names (links to directories among them).
 */
export interface RulesTree {
  readonly files: string[];
  readonly subdirectories: string[];
  readonly ignored: string[];
}

interface TreeEntry {
  readonly path: string;
  readonly kind: 'directory' | 'rules' | 'other';
}

/**
 * What a directory holds, in name order: its subdirectories, its rules files (`.yaml`, `.yml`
 * and `.json`) and its other entries, walked as envoyproxy/ratelimit's runtime loader walks
 * them. Names starting with a dot are skipped, so the `..data` and `..2026_…` entries of a
 * Kubernetes ConfigMap volume never count twice (envoyproxy/ratelimit#367). A symlink to a
 * directory is not followed, as there: a link back up would never end.
 */
const entriesOf = (dir: string, entries: Dirent[]): TreeEntry[] =>
  entries
    .filter(({ name }) => !name.startsWith('.'))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((entry) => ({
      path: join(dir, entry.name),
      kind: entry.isDirectory()
        ? 'directory'
        : RULE_FILE_EXTENSIONS.has(extname(entry.name).toLowerCase())
          ? 'rules'
          : 'other',
    }));

/** Whether `path`, an entry left out for its name, is a file rather than a link to a directory. */
const isFile = (path: string): boolean => statSync(path, { throwIfNoEntry: false })?.isDirectory() !== true;

/** What `loadRules` reads at `path`: the path itself, or a directory's rules files; throws when it cannot tell. */
export function rulesTreeSync(path: string): RulesTree {
  if (!statSync(path).isDirectory()) return { files: [path], subdirectories: [], ignored: [] };
  const tree: RulesTree = { files: [], subdirectories: [], ignored: [] };
  const walk = (dir: string): void => {
    for (const entry of entriesOf(dir, readdirSync(dir, { withFileTypes: true }))) {
      if (entry.kind === 'rules') tree.files.push(entry.path);
      else if (entry.kind === 'directory') {
        tree.subdirectories.push(entry.path);
        walk(entry.path);
      } else tree.ignored.push(entry.path);
    }
  };
  walk(path);
  return tree;
}

/**
 * The files under a rules directory that `loadRules` does not read: those not named `.yaml`,
 * `.yml` or `.json`. envoyproxy/ratelimit reads every file under its config directory, so a
 * rules file named otherwise (`ratelimit`, `limits.conf`) would be left out without a word
 * and every request of its domain allowed; a service can warn about them at start-up.
 */
export function ignoredRuleFiles(path: string): string[] {
  // Each looked at here, not in the walk a watcher makes at every reload.
  return rulesTreeSync(path).ignored.filter(isFile);
}

async function ruleFiles(path: string): Promise<string[]> {
  if (!(await stat(path)).isDirectory()) return [path];
  const files: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    for (const entry of entriesOf(dir, await readdir(dir, { withFileTypes: true }))) {
      if (entry.kind === 'directory') await walk(entry.path);
      else if (entry.kind === 'rules') files.push(entry.path);
    }
  };
  await walk(path);
  return files;
}

/** What one file's text reads as; its rules are frozen, so rule sets may share them. */
interface ParsedFile {
  readonly text: string;
  readonly domains: readonly ReadDomain[];
  readonly problems: readonly RuleProblem[];
}

/**
 * Each file's text as last parsed, by path: a watcher keeps one, so a reload parses only the
 * files that changed, not all thousand of a directory in one turn of the event loop.
 */
export type ParsedFiles = Map<string, ParsedFile>;

function parsed(file: string, text: string, cache: ParsedFiles | undefined): ParsedFile {
  const known = cache?.get(file);
  if (known?.text === text) return known;
  const problems: RuleProblem[] = [];
  const domains = readDomains(text, file, problems);
  const fresh = { text, domains, problems };
  cache?.set(file, fresh);
  return fresh;
}

/** Builds one rule set from every file's text (or the error reading it), or throws every problem. */
function build(
  path: string,
  files: readonly string[],
  texts: readonly (string | Error)[],
  cache: ParsedFiles | undefined,
): RuleSet {
  if (files.length === 0)
    throw new RulesError([readProblem(path, 'The directory holds no .yaml, .yml or .json file.')]);
  const problems: RuleProblem[] = [];
  const domains: ReadDomain[] = [];
  texts.forEach((text, i) => {
    const file = files[i] as string;
    if (text instanceof Error) problems.push(readProblem(file, `Cannot read the file: ${text.message}.`));
    else {
      const read = parsed(file, text, cache);
      domains.push(...read.domains);
      problems.push(...read.problems);
    }
  });
  // A file gone, or no longer read, is forgotten.
  const current = new Set(files);
  for (const file of cache?.keys() ?? []) if (!current.has(file)) cache?.delete(file);
  checkDistinct(domains, problems);
  if (problems.length > 0) throw new RulesError(problems);
  return createRuleSet(domains, files);
}

function rulesText(
  path: string,
  files: readonly string[],
  texts: readonly (string | Error)[],
  cache: ParsedFiles | undefined,
): RulesText {
  // A file that cannot be read counts by its error's message: the same failure is the same text.
  const written = texts.map((text) => (text instanceof Error ? { error: text.message } : text));
  return { text: JSON.stringify([files, written]), build: () => build(path, files, texts, cache) };
}

const unreadable = (path: string, error: unknown): RulesError =>
  new RulesError([readProblem(path, `Cannot read the rules: ${(error as Error).message}.`)], { cause: error });

const asError = (error: unknown): Error => (error instanceof Error ? error : new Error(String(error)));

/**
 * Opened without blocking and checked before it is read: opening a FIFO among the rules files
 * would otherwise wait for a writer forever (holding one of libuv's few threads), and a device
 * such as /dev/zero would read without end.
 */
const OPEN_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK;

function checkRegular(stats: Stats): void {
  if (!stats.isFile()) throw new Error('it is not a regular file');
}

/**
 * A file's bytes as text. Bytes that are not UTF-8 are refused, as envoyproxy/ratelimit's
 * decoder refuses them: read as U+FFFD, a value written in Latin-1 (`café`) would make a rule
 * no request matches.
 */
function utf8Text(bytes: Buffer): string {
  if (!isUtf8(bytes)) throw new Error('it is not UTF-8 text');
  return bytes.toString('utf8');
}

async function readRuleFile(file: string): Promise<string> {
  const handle = await open(file, OPEN_FLAGS);
  try {
    checkRegular(await handle.stat());
    return utf8Text(await handle.readFile());
  } finally {
    await handle.close();
  }
}

function readRuleFileSync(file: string): string {
  const fd = openSync(file, OPEN_FLAGS);
  try {
    checkRegular(fstatSync(fd));
    return utf8Text(readFileSync(fd));
  } finally {
    closeSync(fd);
  }
}

/**
 * Files read at once: a directory of thousands read all together would open as many files,
 * beyond a process's usual limit of open files (EMFILE), while a few at a time read as fast.
 */
const FILES_READ_AT_ONCE = 16;

/** Every file's text, or the error reading it, in the files' order. */
async function readEach(files: readonly string[]): Promise<(string | Error)[]> {
  const texts: (string | Error)[] = [];
  let next = 0;
  const reader = async (): Promise<void> => {
    for (let i = next++; i < files.length; i = next++) texts[i] = await readRuleFile(files[i] as string).catch(asError);
  };
  await Promise.all(Array.from({ length: Math.min(FILES_READ_AT_ONCE, files.length) }, reader));
  return texts;
}

/**
 * The text of `loadRules`, for a watcher to tell a change from a touch before it parses;
 * `cache` keeps what each file parsed to, from one read to the next.
 */
export async function readRulesText(path: string, cache?: ParsedFiles): Promise<RulesText> {
  let files: string[];
  try {
    files = await ruleFiles(path);
  } catch (error) {
    throw unreadable(path, error);
  }
  return rulesText(path, files, await readEach(files), cache);
}

/** The same, synchronously: a watcher loads its first set at construction, so a bad one throws there. */
export function readRulesTextSync(path: string, cache?: ParsedFiles): RulesText {
  let files: string[];
  try {
    files = rulesTreeSync(path).files;
  } catch (error) {
    throw unreadable(path, error);
  }
  const texts = files.map((file) => {
    try {
      return readRuleFileSync(file);
    } catch (error) {
      return asError(error);
    }
  });
  return rulesText(path, files, texts, cache);
}

/**
 * Reads a rules file, or every rules file of a directory, into one rule set. Rejects with a
 * `RulesError` listing every problem of every file (`ERR_SLUICE_RULES_READ` when a file cannot
 * be read); a domain declared in two files is a duplicate.
 *
 * @example
 * const rules = await loadRules('/etc/sluice/rules'); // or a single 'rules.yaml'
 */
export async function loadRules(path: string): Promise<RuleSet> {
  return (await readRulesText(path)).build();
}
