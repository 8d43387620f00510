import { renameSync, rmSync } from 'node:fs';
import { mkdir, mkdtemp, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type RulesWatcher, watchRules } from '@sluice/rules';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

// Deploy layouts after which the watcher once went deaf: each change below was never seen.
const perIp = (domain: string, limit: number) =>
  `domain: ${domain}\ndescriptors:\n  - key: ip\n    rate_limit: { unit: second, requests_per_unit: ${limit} }\n`;
const limitOf = (watcher: RulesWatcher) =>
  watcher.current.matchOne('edge', [{ key: 'ip', value: '1' }])?.rule.policies[0]?.limit;
/** A bounded wait for what a file event leads to: the watcher reacts on its own time. */
const eventually = (check: () => void) => vi.waitFor(check, { timeout: 5000, interval: 5 });

describe('watchRules across deploy layouts', () => {
  let dir: string;
  const open: RulesWatcher[] = [];
  const watch = (path: string) => {
    const watcher = watchRules(path, { debounceMs: 10, onError: () => {} });
    open.push(watcher);
    return watcher;
  };
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-layout-'));
  });
  afterEach(async () => {
    await Promise.all(open.splice(0).map((w) => w.close()));
    await rm(dir, { recursive: true, force: true });
  });

  it("a runtime root's `current` symlink swapped above the rules directory reloads (envoyproxy/ratelimit's layout)", async () => {
    for (const [version, limit] of [
      ['v1', 1],
      ['v2', 2],
    ] as const) {
      await mkdir(join(dir, version, 'ratelimit', 'config'), { recursive: true });
      await writeFile(join(dir, version, 'ratelimit', 'config', 'rules.yaml'), perIp('edge', limit));
    }
    await symlink('v1', join(dir, 'current'));
    const watcher = watch(join(dir, 'current', 'ratelimit', 'config'));
    await symlink('v2', join(dir, 'next'));
    await rename(join(dir, 'next'), join(dir, 'current'));
    await eventually(() => expect(limitOf(watcher)).toBe(2));
    await writeFile(join(dir, 'v2', 'ratelimit', 'config', 'rules.yaml'), perIp('edge', 3));
    await eventually(() => expect(limitOf(watcher)).toBe(3));
  });

  it('a rules directory replaced under the same name (rm, then rename) is watched again', async () => {
    const rules = join(dir, 'rules');
    await mkdir(rules);
    await writeFile(join(rules, 'a.yaml'), perIp('edge', 1));
    const watcher = watch(rules);
    await mkdir(join(dir, 'rules.new'));
    await writeFile(join(dir, 'rules.new', 'a.yaml'), perIp('edge', 2));
    // In one tick, as a deploy script does it: no event is seen between the two steps.
    rmSync(rules, { recursive: true });
    renameSync(join(dir, 'rules.new'), rules);
    await eventually(() => expect(limitOf(watcher)).toBe(2));
    // The writes that went unseen: in place, then a new file.
    await writeFile(join(rules, 'a.yaml'), perIp('edge', 3));
    await eventually(() => expect(limitOf(watcher)).toBe(3));
    await writeFile(join(rules, 'b.yaml'), perIp('other', 1));
    await eventually(() => expect(watcher.current.domains).toEqual(['edge', 'other']));
  });

  it('a rules path that is a symlink to a file elsewhere reloads when that file is edited', async () => {
    await mkdir(join(dir, 'etc'));
    await mkdir(join(dir, 'srv'));
    await writeFile(join(dir, 'srv', 'rules.yaml'), perIp('edge', 1));
    await symlink(join(dir, 'srv', 'rules.yaml'), join(dir, 'etc', 'rules.yaml'));
    const watcher = watch(join(dir, 'etc', 'rules.yaml'));
    await writeFile(join(dir, 'srv', 'rules.yaml'), perIp('edge', 2));
    await eventually(() => expect(limitOf(watcher)).toBe(2));
  });

  it('a directory of symlinks to files kept elsewhere (as nginx sites-enabled) reloads when a linked file is edited', async () => {
    for (const app of ['app1', 'app2']) await mkdir(join(dir, app));
    await mkdir(join(dir, 'rules.d'));
    await writeFile(join(dir, 'app1', 'edge.yaml'), perIp('edge', 1));
    await symlink(join(dir, 'app1', 'edge.yaml'), join(dir, 'rules.d', 'edge.yaml'));
    const watcher = watch(join(dir, 'rules.d'));
    await writeFile(join(dir, 'app1', 'edge.yaml'), perIp('edge', 2));
    await eventually(() => expect(limitOf(watcher)).toBe(2));
    // The link pointed elsewhere: the new target's directory is watched from then on.
    await writeFile(join(dir, 'app2', 'edge.yaml'), perIp('edge', 3));
    await symlink(join(dir, 'app2', 'edge.yaml'), join(dir, 'rules.d', '.edge.yaml.new'));
    await rename(join(dir, 'rules.d', '.edge.yaml.new'), join(dir, 'rules.d', 'edge.yaml'));
    await eventually(() => expect(limitOf(watcher)).toBe(3));
    await writeFile(join(dir, 'app2', 'edge.yaml'), perIp('edge', 4));
    await eventually(() => expect(limitOf(watcher)).toBe(4));
  });
});
