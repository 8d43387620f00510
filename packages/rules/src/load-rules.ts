import { closeSync, constants, fstatSync, openSync, readdirSync, readFileSync, type Stats, statSync } from 'node:fs';
import { open, readdir, stat } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { type RuleProblem, RulesError, readProblem } from './errors.js';
import { checkDistinct, type ReadDomain, readDomains } from './parse-rules.js';
import type { RulesText } from './reloader.js';
import { createRuleSet } from './rule-set.js';
import type { RuleSet } from './types.js';

const RULE_FILE_EXTENSIONS = new Set(['.yaml', '.yml', '.json']);

/**
 * A directory's rules files in name order: `.yaml`, `.yml` and `.json`. Names starting with a
 * dot are skipped, so the `..data` and `..2026_…` entries of a Kubernetes ConfigMap volume
 * never count twice (envoyproxy/ratelimit#367).
 */
const ruleFilesOf = (dir: string, names: string[]): string[] =>
  names
    .filter((name) => !name.startsWith('.') && RULE_FILE_EXTENSIONS.has(extname(name).toLowerCase()))
    .sort()
    .map((name) => join(dir, name));

/** The files `loadRules` reads at `path`: the path itself, or a directory's rules files; throws when it cannot tell. */
export const ruleFilesSync = (path: string): string[] =>
  statSync(path).isDirectory() ? ruleFilesOf(path, readdirSync(path)) : [path];

/** Builds one rule set from every file's text (or the error reading it), or throws every problem. */
function build(path: string, files: readonly string[], texts: readonly (string | Error)[]): RuleSet {
  if (files.length === 0)
    throw new RulesError([readProblem(path, 'The directory holds no .yaml, .yml or .json file.')]);
  const problems: RuleProblem[] = [];
  const domains: ReadDomain[] = [];
  texts.forEach((text, i) => {
    const file = files[i] as string;
    if (text instanceof Error) problems.push(readProblem(file, `Cannot read the file: ${text.message}.`));
    else domains.push(...readDomains(text, file, problems));
  });
  checkDistinct(domains, problems);
  if (problems.length > 0) throw new RulesError(problems);
  return createRuleSet(domains, files);
}

function rulesText(path: string, files: readonly string[], texts: readonly (string | Error)[]): RulesText {
  // A file that cannot be read counts by its error's message: the same failure is the same text.
  const written = texts.map((text) => (text instanceof Error ? { error: text.message } : text));
  return { text: JSON.stringify([files, written]), build: () => build(path, files, texts) };
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

async function readRuleFile(file: string): Promise<string> {
  const handle = await open(file, OPEN_FLAGS);
  try {
    checkRegular(await handle.stat());
    return await handle.readFile('utf8');
  } finally {
    await handle.close();
  }
}

function readRuleFileSync(file: string): string {
  const fd = openSync(file, OPEN_FLAGS);
  try {
    checkRegular(fstatSync(fd));
    return readFileSync(fd, 'utf8');
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

/** The text of `loadRules`, for a watcher to tell a change from a touch before it parses. */
export async function readRulesText(path: string): Promise<RulesText> {
  let files: string[];
  try {
    files = (await stat(path)).isDirectory() ? ruleFilesOf(path, await readdir(path)) : [path];
  } catch (error) {
    throw unreadable(path, error);
  }
  return rulesText(path, files, await readEach(files));
}

/** The same, synchronously: a watcher loads its first set at construction, so a bad one throws there. */
export function readRulesTextSync(path: string): RulesText {
  let files: string[];
  try {
    files = ruleFilesSync(path);
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
  return rulesText(path, files, texts);
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
