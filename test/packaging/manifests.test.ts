import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const workspace = join(dirname(fileURLToPath(import.meta.url)), '../..');
const read = (path: string) => readFileSync(join(workspace, path), 'utf8');
const rootReferences = (JSON.parse(read('tsconfig.json')) as { references: { path: string }[] }).references.map(
  (r) => r.path,
);
const packages = readdirSync(join(workspace, 'packages')).filter((dir) =>
  existsSync(join(workspace, 'packages', dir, 'package.json')),
);

interface Manifest {
  name: string;
  version: string;
  license?: string;
  repository?: { type?: string; url?: string; directory?: string };
  main?: string;
  types?: string;
  exports?: Record<string, unknown>;
  files?: string[];
  scripts?: Record<string, string>;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
}

/** The packages that plug into a limiter an adapter or core made: stores, rules, metrics. */
const PLUG_INS = ['memory', 'redis', 'rules', 'otel'];

/**
 * The packaging conventions of SPEC §6, checked on every package at once so a new package
 * meets them before its first landing (the slow, complete proof is `pnpm test:consumer`):
 * copy packages/core's package.json, tsconfig.json and LICENSE to start one.
 */
describe.each(packages)('packages/%s', (dir) => {
  const manifest = JSON.parse(read(`packages/${dir}/package.json`)) as Manifest;
  const version = JSON.parse(read('packages/core/package.json')).version as string;

  it('names other packages by a real range that the workspace copy satisfies, never workspace:', () => {
    for (const deps of [manifest.dependencies, manifest.peerDependencies, manifest.devDependencies]) {
      for (const [name, range] of Object.entries(deps ?? {})) {
        expect(range, `${name}: use "^${version}"; npm pack keeps workspace: ranges`).not.toMatch(/^workspace:/);
        if (name.startsWith('@sluice/')) expect(range, name).toBe(`^${version}`);
      }
    }
  });

  it("takes @sluice/core as a peer where it plugs into an app's limiter, as a dependency where it is the entry point", () => {
    // A store, the rules or the metrics must work on the very core the app's adapter loaded:
    // a second copy would make its own errors, events and default store.
    if (dir === 'core') return;
    const plugsIn = PLUG_INS.includes(dir);
    expect(manifest.peerDependencies?.['@sluice/core'] !== undefined, 'a peer').toBe(plugsIn);
    expect(manifest.dependencies?.['@sluice/core'] !== undefined, 'a dependency').toBe(!plugsIn);
  });

  it('ships dist with its types for every resolution, a LICENSE, and where it comes from', () => {
    expect(manifest.license).toBe('MIT');
    expect(existsSync(join(workspace, 'packages', dir, 'LICENSE')), 'copy LICENSE from the root').toBe(true);
    expect(manifest.repository?.directory).toBe(`packages/${dir}`);
    expect(manifest.main).toBe('./dist/index.js');
    expect(manifest.types, 'node10 resolution reads `types`, not `exports`').toBe('./dist/index.d.ts');
    expect(manifest.exports?.['.']).toEqual({
      '@sluice/source': './src/index.ts',
      types: './dist/index.d.ts',
      default: './dist/index.js',
    });
    // The source condition must not point at files missing from the tarball.
    expect(manifest.files).toEqual(expect.arrayContaining(['dist', 'src']));
    expect(manifest.scripts?.build).toBe('tsc -b');
    expect(manifest.scripts?.prepack, 'a pack from a clean clone must build dist first').toBe('tsc -b');
    expect(rootReferences, 'add the package to the root tsconfig.json references').toContain(`packages/${dir}`);
  });

  it('has a README whose links work on npm (no ../ paths out of the package)', () => {
    const readme = read(`packages/${dir}/README.md`);
    expect(readme.match(/\]\(\.\.\/[^)]*\)/g) ?? []).toEqual([]);
  });

  it('loads no package through an import() of a variable specifier', () => {
    const sources = readdirSync(join(workspace, 'packages', dir, 'src'), { recursive: true, encoding: 'utf8' });
    for (const file of sources.filter((f) => f.endsWith('.ts'))) {
      expect(read(`packages/${dir}/src/${file}`), file).not.toMatch(/\bimport\(\s*[\w$`]/);
    }
  });
});
