import diagnostics from 'node:diagnostics_channel';
import { writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, rename, rm, symlink, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { isRulesError, type RuleSet, type RulesError, type RulesWatcher, watchRules } from '@sluice/rules';
import { afterEach, beforeEach, describe, expect, it, onTestFinished, vi } from 'vitest';

const perIp = (domain: string, limit: number) =>
  `domain: ${domain}\ndescriptors:\n  - key: ip\n    rate_limit: { unit: second, requests_per_unit: ${limit} }\n`;
const limitOfSet = (rules: RuleSet, domain = 'edge') =>
  rules.matchOne(domain, [{ key: 'ip', value: '1' }])?.rule.policies[0]?.limit;
const limitOf = (watcher: RulesWatcher, domain = 'edge') => limitOfSet(watcher.current, domain);
/** A bounded wait for what a file event leads to: the watcher reacts on its own time. */
const eventually = (check: () => void) => vi.waitFor(check, { timeout: 5000, interval: 5 });

describe('watchRules', () => {
  let dir: string;
  const open: RulesWatcher[] = [];
  const watch = (path: string, options: Parameters<typeof watchRules>[1] = {}) => {
    const watcher = watchRules(path, { debounceMs: 10, onError: () => {}, ...options });
    open.push(watcher);
    return watcher;
  };
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-watch-'));
  });
  afterEach(async () => {
    await Promise.all(open.splice(0).map((w) => w.close()));
    await rm(dir, { recursive: true, force: true });
  });

  it('loads at once, and a bad first document throws at start-up', async () => {
    await writeFile(join(dir, 'rules.yaml'), perIp('edge', 10));
    expect(limitOf(watch(join(dir, 'rules.yaml')))).toBe(10);
    await writeFile(join(dir, 'bad.yaml'), 'domain: edge\nunit: day\n');
    expect(() => watch(join(dir, 'bad.yaml'))).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_RULES_UNKNOWN_KEY' }),
    );
  });

  it('a file edited in place, then saved atomically twice (write and rename), reloads every time', async () => {
    const file = join(dir, 'rules.yaml');
    await writeFile(file, perIp('edge', 10));
    const watcher = watch(file);
    await writeFile(file, perIp('edge', 20));
    await eventually(() => expect(limitOf(watcher)).toBe(20));
    for (const limit of [30, 40]) {
      await writeFile(join(dir, `.rules.yaml.${limit}.tmp`), perIp('edge', limit));
      await rename(join(dir, `.rules.yaml.${limit}.tmp`), file);
      await eventually(() => expect(limitOf(watcher)).toBe(limit));
    }
    expect(watcher.reloads).toBe(3);
  });

  it('a directory: a new file adds its domain, a deleted file removes its rules', async () => {
    await writeFile(join(dir, 'a.yaml'), perIp('a', 1));
    const watcher = watch(dir);
    await writeFile(join(dir, 'b.yaml'), perIp('b', 2));
    await eventually(() => expect(watcher.current.domains).toEqual(['a', 'b']));
    await unlink(join(dir, 'a.yaml'));
    await eventually(() => expect(watcher.current.domains).toEqual(['b']));
    expect(limitOf(watcher, 'a')).toBeUndefined();
  });

  it('a subdirectory is watched: an edit there, and a file of a new subdirectory, reload (they were never read)', async () => {
    await mkdir(join(dir, 'team-a'));
    await writeFile(join(dir, 'team-a', 'edge.yaml'), perIp('edge', 1));
    const watcher = watch(dir);
    expect(limitOf(watcher)).toBe(1);
    await writeFile(join(dir, 'team-a', 'edge.yaml'), perIp('edge', 2));
    await eventually(() => expect(limitOf(watcher)).toBe(2));
    await mkdir(join(dir, 'team-b'));
    await writeFile(join(dir, 'team-b', 'api.yaml'), perIp('api', 3));
    await eventually(() => expect(limitOf(watcher, 'api')).toBe(3));
    await writeFile(join(dir, 'team-b', 'api.yaml'), perIp('api', 4));
    await eventually(() => expect(limitOf(watcher, 'api')).toBe(4));
  });

  it('a Kubernetes ConfigMap update (the ..data symlink swapped) reloads, by file and by directory', async () => {
    const version = async (name: string, limit: number) => {
      await mkdir(join(dir, name));
      await writeFile(join(dir, name, 'rules.yaml'), perIp('edge', limit));
    };
    await version('..2026_11_24_10_00_00.1', 10);
    await symlink('..2026_11_24_10_00_00.1', join(dir, '..data'));
    await symlink('..data/rules.yaml', join(dir, 'rules.yaml'));
    const byDir = watch(dir);
    const byFile = watch(join(dir, 'rules.yaml'));
    // What the kubelet does: a new version directory, a new link, renamed over `..data`.
    await version('..2026_11_24_10_05_00.2', 50);
    await symlink('..2026_11_24_10_05_00.2', join(dir, '..data_tmp'));
    await rename(join(dir, '..data_tmp'), join(dir, '..data'));
    await rm(join(dir, '..2026_11_24_10_00_00.1'), { recursive: true });
    await eventually(() => expect([limitOf(byDir), limitOf(byFile)]).toEqual([50, 50]));
    expect(byDir.current.domains).toEqual(['edge']);
  });

  it('a symlinked directory swapped for another (a runtime root) is followed', async () => {
    await mkdir(join(dir, 'v1'));
    await mkdir(join(dir, 'v2'));
    await writeFile(join(dir, 'v1', 'rules.yaml'), perIp('edge', 1));
    await writeFile(join(dir, 'v2', 'rules.yaml'), perIp('edge', 2));
    await symlink('v1', join(dir, 'current'));
    const watcher = watch(join(dir, 'current'));
    await symlink('v2', join(dir, 'next'));
    await rename(join(dir, 'next'), join(dir, 'current'));
    await eventually(() => expect(limitOf(watcher)).toBe(2));
    // The new target is watched too.
    await writeFile(join(dir, 'v2', 'rules.yaml'), perIp('edge', 3));
    await eventually(() => expect(limitOf(watcher)).toBe(3));
  });

  it('a broken edit keeps the last good set and reports it; the fix then loads', async () => {
    const file = join(dir, 'rules.yaml');
    await writeFile(file, perIp('edge', 10));
    const published: { source: string; ok: boolean }[] = [];
    const listen = (event: unknown) => published.push(event as { source: string; ok: boolean });
    diagnostics.subscribe('sluice:rules-reload', listen);
    onTestFinished(() => {
      diagnostics.unsubscribe('sluice:rules-reload', listen);
    });
    const errors: RulesError[] = [];
    const watcher = watch(file, { onError: (e) => errors.push(e) });
    const before = watcher.current;
    await writeFile(file, perIp('edge', 20).replace('requests_per_unit', 'request_per_unit'));
    await eventually(() => expect(errors).toHaveLength(1));
    expect(watcher.current).toBe(before);
    expect(watcher.errors).toBe(1);
    expect(isRulesError(errors[0])).toBe(true);
    expect(errors[0]?.problems.map((p) => [p.code, p.source, p.line])).toContainEqual([
      'ERR_SLUICE_RULES_UNKNOWN_KEY',
      file,
      4,
    ]);
    await writeFile(file, perIp('edge', 30));
    await eventually(() => expect(limitOf(watcher)).toBe(30));
    expect([watcher.reloads, watcher.errors]).toEqual([1, 1]);
    // The counts metrics read (§9): one rejected, then one applied.
    expect(published.map((e) => [e.source, e.ok])).toEqual([
      [file, false],
      [file, true],
    ]);
  });

  it('an emptied file keeps the last good set (it once swapped in a set without limits)', async () => {
    const file = join(dir, 'rules.yaml');
    await writeFile(file, perIp('edge', 10));
    const errors: RulesError[] = [];
    const watcher = watch(file, { onError: (e) => errors.push(e) });
    await writeFile(file, '');
    await eventually(() => expect(errors.map((e) => e.code)).toEqual(['ERR_SLUICE_RULES_MISSING_KEY']));
    expect([limitOf(watcher), watcher.reloads]).toEqual([10, 0]);
  });

  it('a bad document that has not changed is reported once, however often it is re-read', async () => {
    const file = join(dir, 'rules.yaml');
    await writeFile(file, perIp('edge', 10));
    const errors: RulesError[] = [];
    // Only reload() re-reads here, so the count of reads is known.
    const watcher = watch(file, { debounceMs: 60_000, onError: (e) => errors.push(e) });
    const bad = perIp('edge', 20).replace('second', 'fortnight');
    await writeFile(file, bad);
    for (let i = 0; i < 3; i++) await watcher.reload();
    expect([errors.length, watcher.errors]).toEqual([1, 1]);
    await writeFile(file, bad.replace('20', '30'));
    await watcher.reload();
    await watcher.reload();
    expect(errors).toHaveLength(2);
    // Once a good set has loaded, the first bad text is news again.
    await writeFile(file, perIp('edge', 40));
    await watcher.reload();
    await writeFile(file, bad);
    await watcher.reload();
    expect([limitOf(watcher), watcher.reloads, watcher.errors]).toEqual([40, 1, 3]);
  });

  it('a missing rules directory is reported once, however often its parent changes (it was reported on every event)', async () => {
    const rules = join(dir, 'rules');
    await mkdir(rules);
    await writeFile(join(rules, 'a.yaml'), perIp('edge', 10));
    const errors: RulesError[] = [];
    const watcher = watch(rules, { onError: (e) => errors.push(e) });
    // Moved away in one step: removing the files, then the directory, would be two failures.
    await rename(rules, join(dir, 'gone'));
    await eventually(() => expect(errors).toHaveLength(1));
    // Other files come and go beside the missing directory; each is an event and a re-read.
    for (let i = 0; i < 3; i++) await writeFile(join(dir, `other-${i}.txt`), 'x');
    for (let i = 0; i < 3; i++) await watcher.reload();
    expect([errors.length, watcher.errors]).toEqual([1, 1]);
    expect(errors[0]?.problems.map((p) => [p.code, p.source, p.line, p.column])).toEqual([
      ['ERR_SLUICE_RULES_READ', rules, 1, 1],
    ]);
    // Once the rules load again, the same failure is news again.
    await mkdir(join(dir, 'next'));
    await writeFile(join(dir, 'next', 'a.yaml'), perIp('edge', 20));
    await rename(join(dir, 'next'), rules);
    await watcher.reload();
    await rename(rules, join(dir, 'gone-again'));
    await watcher.reload();
    expect([limitOf(watcher), watcher.reloads, errors.length]).toEqual([20, 1, 2]);
  });

  it('a burst of writes makes one reload with the last text; an unchanged touch makes none', async () => {
    const file = join(dir, 'rules.yaml');
    await writeFile(file, perIp('edge', 1));
    const reloaded = vi.fn();
    const watcher = watch(file, { debounceMs: 200, onReload: reloaded });
    // Written in one tick: every event of the burst arrives within one debounce window.
    for (let limit = 2; limit <= 20; limit++) writeFileSync(file, perIp('edge', limit));
    await eventually(() => expect(reloaded).toHaveBeenCalledTimes(1));
    expect(limitOf(watcher)).toBe(20);
    expect(reloaded).toHaveBeenCalledWith(watcher.current);
    await writeFile(file, perIp('edge', 20));
    await watcher.reload();
    expect(watcher.reloads).toBe(1);
  });

  // Every file was parsed again at each reload: one edit among 1,000 files held the event loop ~0.5 s.
  it('a reload parses only the files that changed: the rules of the others stay the same objects', async () => {
    await writeFile(join(dir, 'a.yaml'), perIp('a', 1));
    await writeFile(join(dir, 'b.yaml'), perIp('b', 1));
    const errors: RulesError[] = [];
    const watcher = watch(dir, { debounceMs: 60_000, onError: (e) => errors.push(e) });
    const ruleOf = (domain: string) => watcher.current.matchOne(domain, [{ key: 'ip', value: '1' }])?.rule;
    const untouched = ruleOf('b');
    await writeFile(join(dir, 'a.yaml'), perIp('a', 2));
    await watcher.reload();
    expect([limitOf(watcher, 'a'), watcher.reloads]).toEqual([2, 1]);
    expect(ruleOf('b')).toBe(untouched);
    // Checks across files still see every file, parsed or not.
    await writeFile(join(dir, 'a.yaml'), perIp('b', 3));
    await watcher.reload();
    expect(errors.map((e) => e.code)).toEqual(['ERR_SLUICE_RULES_DUPLICATE']);
  });

  it('a poll shorter than the debounce still reloads (each poll put the reload off again, for ever)', async () => {
    const file = join(dir, 'rules.yaml');
    await writeFile(file, perIp('edge', 1));
    const watcher = watch(file, { debounceMs: 200, pollIntervalMs: 10 });
    await writeFile(file, perIp('edge', 2));
    // Within ten debounce delays of the change, however often the poll asks again.
    await eventually(() => expect(limitOf(watcher)).toBe(2));
  });

  it('a change saved while the first set parses is seen (it waited for the next change)', async () => {
    const file = join(dir, 'rules.yaml');
    const many = Array.from(
      { length: 5000 },
      (_, i) => `  - { key: k, value: v${i}, rate_limit: { unit: second, requests_per_unit: 1 } }\n`,
    );
    await writeFile(file, perIp('edge', 1) + many.join(''));
    // Another thread saves the change while this one is busy parsing the first set; whenever
    // it lands, the watcher must end up with it.
    const writer = new Worker(
      `const { workerData: [file, text] } = require('node:worker_threads');
       Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50);
       require('node:fs').writeFileSync(file, text);`,
      { eval: true, workerData: [file, perIp('edge', 2) + many.join('')] },
    );
    const written = new Promise((resolve) => writer.once('exit', resolve));
    const watcher = watch(file);
    await written;
    await eventually(() => expect(limitOf(watcher)).toBe(2));
  });

  it('check refuses a set as a bad document is refused: at start-up, then by keeping the set in force', async () => {
    const file = join(dir, 'rules.yaml');
    const tooHigh = (rules: RuleSet) => {
      if ((limitOfSet(rules) ?? 0) > 20) throw new Error('more than this store takes');
    };
    await writeFile(file, perIp('edge', 30));
    expect(() => watch(file, { check: tooHigh })).toThrow(
      expect.objectContaining({
        code: 'ERR_SLUICE_RULES_INVALID_POLICY',
        message: expect.stringContaining('more than this store takes'),
      }),
    );
    await writeFile(file, perIp('edge', 10));
    const errors: RulesError[] = [];
    const watcher = watch(file, { check: tooHigh, debounceMs: 60_000, onError: (e) => errors.push(e) });
    await writeFile(file, perIp('edge', 30));
    await watcher.reload();
    expect([limitOf(watcher), watcher.errors, errors[0]?.problems[0]?.source]).toEqual([10, 1, file]);
    await writeFile(file, perIp('edge', 20));
    await watcher.reload();
    expect([limitOf(watcher), watcher.reloads]).toEqual([20, 1]);
  });

  it('a callback that throws stops nothing', async () => {
    const file = join(dir, 'rules.yaml');
    await writeFile(file, perIp('edge', 1));
    const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
    const watcher = watch(file, {
      onReload: () => {
        throw new Error('user bug');
      },
    });
    await writeFile(file, perIp('edge', 2));
    await eventually(() => expect(limitOf(watcher)).toBe(2));
    await writeFile(file, perIp('edge', 3));
    await eventually(() => expect(limitOf(watcher)).toBe(3));
    expect(logged).toHaveBeenCalled();
    logged.mockRestore();
  });

  it('after close() nothing reloads: a second watcher sees the change, the closed one does not', async () => {
    const file = join(dir, 'rules.yaml');
    await writeFile(file, perIp('edge', 1));
    const closed = watch(file);
    await closed.close();
    await closed.close();
    const live = watch(file);
    await writeFile(file, perIp('edge', 2));
    await eventually(() => expect(limitOf(live)).toBe(2));
    await closed.reload();
    expect([limitOf(closed), closed.reloads]).toEqual([1, 0]);
  });

  it('bad options throw at start-up', async () => {
    await writeFile(join(dir, 'rules.yaml'), perIp('edge', 1));
    const file = join(dir, 'rules.yaml');
    expect(() => watchRules(file, { debounceMs: -1 })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_OPTION' }),
    );
    expect(() => watchRules(file, { pollIntervalMs: 0 })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_OPTION' }),
    );
    expect(() => watchRules(file, { onError: 'log' as never })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_OPTION' }),
    );
  });

  it('a misspelt option, an options value that is not an object, or a path that is not text throws (they were ignored or coerced)', async () => {
    await writeFile(join(dir, 'rules.yaml'), perIp('edge', 1));
    const file = join(dir, 'rules.yaml');
    expect(() => watchRules(file, { pollIntervalMS: 10 } as never)).toThrow(
      expect.objectContaining({
        code: 'ERR_SLUICE_UNKNOWN_OPTION',
        message: expect.stringContaining('pollIntervalMS'),
      }),
    );
    expect(() => watchRules(file, 'fast' as never)).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_OPTION' }),
    );
    for (const path of ['', 42, undefined]) {
      expect(() => watchRules(path as never)).toThrow(
        expect.objectContaining({ code: 'ERR_SLUICE_INVALID_OPTION', message: expect.stringContaining('`path`') }),
      );
    }
  });

  // Node runs a timer longer than 2^31 - 1 ms after 1 ms: a poll meant for once a month would
  // re-read the rules a thousand times a second.
  it('a poll or debounce longer than a timer can wait throws at start-up', async () => {
    await writeFile(join(dir, 'rules.yaml'), perIp('edge', 1));
    const file = join(dir, 'rules.yaml');
    for (const options of [{ pollIntervalMs: 2 ** 31 }, { debounceMs: 3_000_000_000 }]) {
      expect(() => watchRules(file, options)).toThrow(
        expect.objectContaining({ code: 'ERR_SLUICE_INVALID_OPTION', message: expect.stringContaining('2147483647') }),
      );
    }
  });
});
