import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { ignoredRuleFiles, isRulesError, loadRules, type RuleProblem, watchRules } from '@sluice/rules';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

const execFileAsync = promisify(execFile);

const perIp = (domain: string, limit: number) =>
  `domain: ${domain}\ndescriptors:\n  - key: remote_address\n    rate_limit: { unit: second, requests_per_unit: ${limit} }\n`;

async function problemsOf(path: string): Promise<RuleProblem[]> {
  const error = await loadRules(path).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(isRulesError(error)).toBe(true);
  return [...(error as { problems: RuleProblem[] }).problems];
}

describe('loadRules', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-rules-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('reads one file', async () => {
    await writeFile(join(dir, 'edge.yaml'), perIp('edge', 10));
    const rules = await loadRules(join(dir, 'edge.yaml'));
    expect(rules.domains).toEqual(['edge']);
    expect(rules.sources).toEqual([join(dir, 'edge.yaml')]);
  });

  it('reads every .yaml, .yml and .json file of a directory, and nothing else', async () => {
    await writeFile(join(dir, 'a.yaml'), perIp('a', 1));
    await writeFile(join(dir, 'b.yml'), perIp('b', 2));
    await writeFile(join(dir, 'c.json'), JSON.stringify({ domain: 'c', descriptors: [] }));
    await writeFile(join(dir, 'notes.txt'), 'not rules');
    await writeFile(join(dir, '.hidden.yaml'), 'broken: [');
    const rules = await loadRules(dir);
    expect(rules.domains).toEqual(['a', 'b', 'c']);
  });

  // envoyproxy/ratelimit reads every file under its config directory: rules in a file named
  // otherwise would be left out without a word, so the files left out can be listed.
  it('ignoredRuleFiles lists the files it leaves out: not dot names, links to directories or a file given', async () => {
    await mkdir(join(dir, 'nested'));
    await writeFile(join(dir, 'a.yaml'), perIp('a', 1));
    await writeFile(join(dir, 'ratelimit'), perIp('b', 2));
    await writeFile(join(dir, 'nested', 'limits.conf'), perIp('c', 3));
    await writeFile(join(dir, '.hidden'), 'not rules');
    await symlink(join(dir, 'nested'), join(dir, 'linked'));
    await symlink(join(dir, 'ratelimit'), join(dir, 'link-to-file'));
    expect(ignoredRuleFiles(dir)).toEqual([
      join(dir, 'link-to-file'),
      join(dir, 'nested', 'limits.conf'),
      join(dir, 'ratelimit'),
    ]);
    expect(ignoredRuleFiles(join(dir, 'ratelimit'))).toEqual([]);
  });

  // envoyproxy/ratelimit's runtime loader walks the subdirectories of its config directory.
  it("reads the rules files of subdirectories, not a dot directory's (they were left out)", async () => {
    await mkdir(join(dir, 'team-a', 'nested'), { recursive: true });
    await mkdir(join(dir, '.git'));
    await writeFile(join(dir, 'edge.yaml'), perIp('edge', 1));
    await writeFile(join(dir, 'team-a', 'api.yaml'), perIp('api', 2));
    await writeFile(join(dir, 'team-a', 'nested', 'jobs.yml'), perIp('jobs', 3));
    await writeFile(join(dir, '.git', 'config.yaml'), 'broken: [');
    const rules = await loadRules(dir);
    expect(rules.domains).toEqual(['edge', 'api', 'jobs']);
    expect(rules.sources).toEqual([
      join(dir, 'edge.yaml'),
      join(dir, 'team-a', 'api.yaml'),
      join(dir, 'team-a', 'nested', 'jobs.yml'),
    ]);
  });

  it('a Kubernetes ConfigMap volume counts each domain once (..data is skipped)', async () => {
    const version = join(dir, '..2026_11_24_10_00_00.000000001');
    await mkdir(version);
    await writeFile(join(version, 'edge.yaml'), perIp('edge', 10));
    await symlink('..2026_11_24_10_00_00.000000001', join(dir, '..data'));
    await symlink('..data/edge.yaml', join(dir, 'edge.yaml'));
    const rules = await loadRules(dir);
    expect(rules.domains).toEqual(['edge']);
  });

  it('one domain in two files is a duplicate; problems of every file are reported together', async () => {
    await writeFile(join(dir, 'a.yaml'), perIp('edge', 1));
    await writeFile(join(dir, 'b.yaml'), perIp('edge', 2));
    await writeFile(join(dir, 'c.yaml'), 'domain: c\ndescriptors:\n  - key: x\n    rate_limt: {}\n');
    const problems = await problemsOf(dir);
    expect(problems.map((p) => [p.code, p.source, p.line, p.column])).toEqual([
      ['ERR_SLUICE_RULES_DUPLICATE', join(dir, 'b.yaml'), 1, 9],
      ['ERR_SLUICE_RULES_UNKNOWN_KEY', join(dir, 'c.yaml'), 4, 5],
    ]);
    expect(problems[0]?.message).toContain(`${join(dir, 'a.yaml')}:1:9`);
  });

  it('an emptied file among others is refused, not read as a file without rules', async () => {
    await writeFile(join(dir, 'a.yaml'), perIp('a', 1));
    await writeFile(join(dir, 'b.yaml'), '');
    expect((await problemsOf(dir)).map((p) => [p.code, p.source])).toEqual([
      ['ERR_SLUICE_RULES_MISSING_KEY', join(dir, 'b.yaml')],
    ]);
  });

  it('a missing path or an empty directory is ERR_SLUICE_RULES_READ', async () => {
    expect((await problemsOf(join(dir, 'nope.yaml')))[0]?.code).toBe('ERR_SLUICE_RULES_READ');
    expect((await problemsOf(dir))[0]?.message).toContain('no .yaml');
  });

  it('a read problem stands at line 1, column 1 (it was at 0:0, though lines count from 1)', async () => {
    const missing = join(dir, 'nope.yaml');
    const error = await loadRules(missing).catch((e: unknown) => e);
    expect(isRulesError(error) && error.problems.map((p) => [p.line, p.column])).toEqual([[1, 1]]);
    expect((error as Error).message).toContain(`${missing}:1:1 Cannot read the rules`);
  });

  it('a FIFO among the rules is refused as not a regular file (reading it waited for a writer forever)', async () => {
    await writeFile(join(dir, 'a.yaml'), perIp('a', 1));
    const fifo = join(dir, 'b.yaml');
    await execFileAsync('mkfifo', [fifo]);
    for (const path of [dir, fifo]) {
      const problems = await problemsOf(path);
      expect(problems.map((p) => [p.code, p.source])).toEqual([['ERR_SLUICE_RULES_READ', fifo]]);
      expect(problems[0]?.message).toContain('not a regular file');
    }
    // A watcher reads its first set synchronously: there the wait blocked the whole process.
    expect(() => watchRules(dir)).toThrow(/b\.yaml:1:1 Cannot read the file: it is not a regular file/);
  });

  // Read as U+FFFD, a value written in Latin-1 made a rule no request matches.
  it('a file that is not UTF-8 is refused, not read with its bytes replaced', async () => {
    const latin1 = join(dir, 'a.yaml');
    await writeFile(latin1, Buffer.from(perIp('a', 1).replace('remote_address', 'caf\u00e9'), 'latin1'));
    const problems = await problemsOf(latin1);
    expect(problems.map((p) => [p.code, p.source, p.message])).toEqual([
      ['ERR_SLUICE_RULES_READ', latin1, 'Cannot read the file: it is not UTF-8 text.'],
    ]);
    expect(() => watchRules(latin1)).toThrow(/a\.yaml:1:1 Cannot read the file: it is not UTF-8 text/);
    await writeFile(latin1, perIp('a', 1).replace('remote_address', 'caf\u00e9'));
    expect((await loadRules(latin1)).rules[0]?.path).toEqual([{ key: 'café' }]);
  });

  it('a directory of more files than the process may open at once loads (it failed with EMFILE)', async () => {
    await Promise.all(Array.from({ length: 600 }, (_, i) => writeFile(join(dir, `d${i}.yaml`), perIp(`d${i}`, 1))));
    // A child process under a limit of 128 open files, far below the 600 files to read.
    const script =
      'import { loadRules } from "@sluice/rules"; console.log((await loadRules(process.argv[1])).domains.length);';
    const args = ['--import', 'tsx', '--conditions=@sluice/source', '--input-type=module', '-e', script, dir];
    const { stdout } = await execFileAsync(
      'bash',
      ['-c', 'ulimit -n 128 && exec "$0" "$@"', process.execPath, ...args],
      {
        cwd: fileURLToPath(new URL('../..', import.meta.url)),
      },
    );
    expect(stdout.trim()).toBe('600');
  });
});
