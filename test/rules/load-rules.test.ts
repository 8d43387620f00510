import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isRulesError, loadRules, type RuleProblem } from '@sluice/rules';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

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
});
