import { readdir, readFile, stat } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { type RuleProblem, RulesError } from './errors.js';
import { checkDistinct, type ReadDomain, readDomains } from './parse-rules.js';
import { createRuleSet } from './rule-set.js';
import type { RuleSet } from './types.js';

const RULE_FILE_EXTENSIONS = new Set(['.yaml', '.yml', '.json']);

const readProblem = (source: string, message: string): RuleProblem => ({
  code: 'ERR_SLUICE_RULES_READ',
  message,
  source,
  line: 0,
  column: 0,
});

/**
 * The rules files at `path`: the file itself, or a directory's `.yaml`, `.yml` and `.json`
 * files in name order. Names starting with a dot are skipped, so the `..data` and
 * `..2026_…` entries of a Kubernetes ConfigMap volume never count twice (envoyproxy/ratelimit#367).
 */
export async function ruleFiles(path: string): Promise<string[]> {
  const info = await stat(path);
  if (!info.isDirectory()) return [path];
  const names = await readdir(path);
  return names
    .filter((name) => !name.startsWith('.') && RULE_FILE_EXTENSIONS.has(extname(name).toLowerCase()))
    .sort()
    .map((name) => join(path, name));
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
  let files: string[];
  try {
    files = await ruleFiles(path);
  } catch (error) {
    throw new RulesError([readProblem(path, `Cannot read the rules: ${(error as Error).message}.`)], { cause: error });
  }
  if (files.length === 0)
    throw new RulesError([readProblem(path, 'The directory holds no .yaml, .yml or .json file.')]);
  const problems: RuleProblem[] = [];
  const domains: ReadDomain[] = [];
  const texts = await Promise.allSettled(files.map((file) => readFile(file, 'utf8')));
  texts.forEach((text, i) => {
    const file = files[i] as string;
    if (text.status === 'rejected') problems.push(readProblem(file, `Cannot read the file: ${text.reason.message}.`));
    else domains.push(...readDomains(text.value, file, problems));
  });
  checkDistinct(domains, problems);
  if (problems.length > 0) throw new RulesError(problems);
  return createRuleSet(domains, files);
}
