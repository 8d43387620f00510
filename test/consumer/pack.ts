import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { run } from './shell.js';

export interface Packed {
  name: string;
  /** What users import: the package, and each JavaScript subpath it exports (`@sluice/otel/prometheus`). */
  entryPoints: string[];
  /** The tarball `npm pack` made: what the scratch projects install. */
  tarball: string;
}

interface Manifest {
  name: string;
  private?: boolean;
  license?: string;
  repository?: unknown;
  main?: string;
  types?: string;
  exports?: unknown;
  [field: string]: unknown;
}

/** Every string an `exports` map can resolve to. */
function exportTargets(exports: unknown): string[] {
  if (typeof exports === 'string') return [exports];
  if (typeof exports !== 'object' || exports === null) return [];
  return Object.values(exports).flatMap(exportTargets);
}

/**
 * What the issue found broken, checked in the unpacked tarball: a `workspace:` range, a
 * missing LICENSE or repository, an export (any condition, `@sluice/source` included) or
 * `main`/`types` pointing at a file the tarball lacks, an `import()` of a variable specifier in the built code, and
 * README links that leave the package (they break on npm).
 */
function checkTarball(root: string, workspace: string): string[] {
  const problems: string[] = [];
  const text = readFileSync(join(root, 'package.json'), 'utf8');
  const manifest = JSON.parse(text) as Manifest;
  if (text.includes('workspace:')) problems.push('package.json keeps a workspace: range');
  if (manifest.license !== 'MIT' || !existsSync(join(root, 'LICENSE'))) problems.push('no MIT LICENSE file');
  if (manifest.repository === undefined) problems.push('no repository field');
  if (manifest.main === undefined || manifest.types === undefined) problems.push('no main/types for node10 resolution');
  const targets = [manifest.main, manifest.types, ...exportTargets(manifest.exports)];
  for (const target of targets) {
    if (typeof target === 'string' && !existsSync(join(root, target))) problems.push(`points at missing ${target}`);
  }
  for (const file of readdirSync(join(root, 'dist'), { recursive: true, encoding: 'utf8' })) {
    if (!file.endsWith('.js')) continue;
    const code = readFileSync(join(root, 'dist', file), 'utf8');
    if (/\bimport\(\s*[\w$`]/.test(code)) problems.push(`dist/${file} has an import() of a variable specifier`);
  }
  const readme = existsSync(join(root, 'README.md')) ? readFileSync(join(root, 'README.md'), 'utf8') : '';
  if (readme === '') problems.push('no README.md');
  for (const [link] of readme.matchAll(/\]\(\.\.\/[^)]*\)/g)) problems.push(`README link leaves the package: ${link}`);
  problems.push(...brokenRepositoryLinks(readme, manifest.repository, workspace));
  return problems.map((problem) => `${manifest.name}: ${problem}`);
}

/** Links into this repository on GitHub must name a file or folder that exists here. */
function brokenRepositoryLinks(readme: string, repository: unknown, workspace: string): string[] {
  const url = (repository as { url?: string } | undefined)?.url;
  const base = url?.replace(/^git\+/, '').replace(/\.git$/, '');
  if (base === undefined) return [];
  const problems: string[] = [];
  for (const [, path] of readme.matchAll(new RegExp(`${base}/(?:blob|tree)/main/([^)#\\s]+)`, 'g'))) {
    if (path !== undefined && !existsSync(join(workspace, path))) problems.push(`README links to missing ${path}`);
  }
  return problems;
}

const entryPoints = (manifest: Manifest): string[] =>
  Object.keys((manifest.exports as Record<string, unknown> | undefined) ?? { '.': '' })
    .filter((key) => !key.endsWith('.json'))
    .map((key) => manifest.name + key.slice(1));

/** The publishable packages under packages/, in a stable order. */
export function publishablePackages(workspace: string): string[] {
  return readdirSync(join(workspace, 'packages'))
    .map((dir) => join(workspace, 'packages', dir))
    .filter((dir) => existsSync(join(dir, 'package.json')))
    .filter((dir) => (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest).private !== true)
    .sort();
}

/**
 * Packs every package with npm and with pnpm (npm copies package.json as it is; pnpm rewrites
 * `workspace:` ranges, so only npm's tarball shows one left behind), unpacks both, checks them,
 * and fails when the two tools disagree on a manifest's dependencies.
 */
export async function packAll(workspace: string, scratch: string): Promise<{ packed: Packed[]; problems: string[] }> {
  const packed: Packed[] = [];
  const problems: string[] = [];
  for (const tool of ['npm', 'pnpm']) await mkdir(join(scratch, tool), { recursive: true });
  for (const dir of publishablePackages(workspace)) {
    const name = (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest).name;
    const manifests: Manifest[] = [];
    for (const tool of ['npm', 'pnpm']) {
      const destination = join(scratch, tool);
      const before = new Set(readdirSync(destination));
      await run(tool, ['pack', '--pack-destination', destination], dir);
      const tarball = readdirSync(destination).find((file) => file.endsWith('.tgz') && !before.has(file));
      if (tarball === undefined) throw new Error(`${tool} pack made no tarball for ${name}`);
      const unpacked = join(destination, tarball.replace(/\.tgz$/, ''));
      await mkdir(unpacked);
      await run('tar', ['-xzf', join(destination, tarball), '-C', unpacked, '--strip-components=1'], destination);
      problems.push(...checkTarball(unpacked, workspace).map((problem) => `${tool} pack: ${problem}`));
      manifests.push(JSON.parse(readFileSync(join(unpacked, 'package.json'), 'utf8')) as Manifest);
      if (tool === 'npm')
        packed.push({ name, entryPoints: entryPoints(manifests[0] as Manifest), tarball: join(destination, tarball) });
    }
    const [fromNpm, fromPnpm] = manifests.map((m) => JSON.stringify([m.dependencies, m.peerDependencies]));
    if (fromNpm !== fromPnpm) problems.push(`${name}: npm and pnpm pack disagree on dependencies`);
  }
  return { packed, problems };
}
