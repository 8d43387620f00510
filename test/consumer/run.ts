/**
 * The consumer test (SPEC §6, issue 13): builds and packs every package, installs the
 * tarballs with npm into scratch projects outside the workspace, and runs small apps for
 * Express, Koa, Fastify and the bare core limiter as ESM, CommonJS, TypeScript (nodenext,
 * node10, bundler) and an esbuild bundle, each refused with a 429 over real HTTP after its
 * limit. Run: `pnpm test:consumer` (`.ci/run` does). SLUICE_KEEP_SCRATCH=1 keeps the projects.
 */
import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { checkApp } from './http-check.js';
import { packAll } from './pack.js';
import { run } from './shell.js';
import {
  compile,
  oldestDeclarationProblems,
  RESOLUTIONS,
  type Resolution,
  writeEveryPackage,
  writeTsconfigs,
} from './typescript.js';

const here = dirname(fileURLToPath(import.meta.url));
const workspace = join(here, '../..');
const APPS = ['express', 'koa', 'fastify', 'core'];
/** What a user installs beside sluice: the frameworks, their types, and a TypeScript 5 (node10 is gone from 7). */
const THIRD_PARTY = [
  'express@^5',
  'koa@^3',
  'fastify@^5',
  '@types/express@^5',
  '@types/koa@^3',
  '@types/node@^20',
  'typescript@^5',
  // What @sluice/otel/prometheus runs on, at the newest SDK line (its API 1.10): its peers.
  '@opentelemetry/sdk-metrics@^3',
  // A range without a floor took npm's `latest` tag, the SDK 2 line's exporter.
  '@opentelemetry/exporter-prometheus@>=0.300.0 <0.400.0',
  // The oldest TypeScript 5, beside it, for the declarations alone.
  'ts50@npm:typescript@~5.0.4',
];

const started = Date.now();
const problems: string[] = [];
const step = (message: string) => console.log(`[consumer ${((Date.now() - started) / 1000).toFixed(1)}s] ${message}`);
const expectApp = async (label: string, file: string, cwd: string) => {
  const problem = await checkApp(label, file, cwd);
  if (problem !== undefined) problems.push(problem);
};

async function project(scratch: string, name: string, install: readonly string[]): Promise<string> {
  const dir = join(scratch, name);
  await cp(join(here, 'fixtures'), dir, { recursive: true });
  await writeFile(join(dir, 'package.json'), `${JSON.stringify({ name, private: true, type: 'module' }, null, 2)}\n`);
  await run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', ...install], dir);
  return dir;
}

const scratch = await mkdtemp(join(tmpdir(), 'sluice-consumer-'));
try {
  step('building every package');
  await run('pnpm', ['build'], workspace);
  step(`packing with npm and pnpm into ${scratch}`);
  const { packed, problems: packProblems } = await packAll(workspace, scratch);
  problems.push(...packProblems);
  const tarballs = packed.map((p) => p.tarball);

  step('core alone: the default store must limit with nothing else installed');
  const coreTarball = packed.find((p) => p.name === '@sluice/core')?.tarball;
  if (coreTarball === undefined) throw new Error('no @sluice/core tarball');
  const coreOnly = await project(scratch, 'core-only', [coreTarball]);
  await expectApp('core alone, ESM', 'core.mjs', coreOnly);
  await expectApp('core alone, CommonJS', 'core.cjs', coreOnly);

  step('every package, with the frameworks');
  const app = await project(scratch, 'app', [...tarballs, ...THIRD_PARTY]);
  // Every package must share the app's one core: a second copy makes errors, events and a
  // default store of its own.
  const cores = new Set(
    (await run('npm', ['ls', '@sluice/core', '--all', '--parseable'], app)).split('\n').filter(Boolean),
  );
  if (cores.size !== 1) problems.push(`@sluice/core installed ${cores.size} times: ${[...cores].join(', ')}`);
  await writeTsconfigs(app);
  await writeEveryPackage(
    app,
    packed.map((p) => p.name),
  );
  for (const resolution of Object.keys(RESOLUTIONS) as Resolution[]) {
    const problem = await compile(app, resolution);
    if (problem !== undefined) problems.push(problem);
  }
  const declarations = await oldestDeclarationProblems(app);
  if (declarations !== undefined) problems.push(declarations);
  await build({
    entryPoints: APPS.map((name) => join(app, 'ts', `${name}.ts`)),
    absWorkingDir: app,
    outdir: join(app, 'out/bundle'),
    outExtension: { '.js': '.cjs' },
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    logLevel: 'error',
  });
  for (const [label, file] of [
    ['every package, TypeScript nodenext (ESM import)', 'out/nodenext/every-package.js'],
    ['every package, TypeScript node10 (CommonJS require)', 'out/node10/every-package.js'],
  ]) {
    const problem = await run(process.execPath, [file as string], app).then(
      () => undefined,
      (error: Error) => `${label}: ${error.message}`,
    );
    if (problem !== undefined) problems.push(problem);
  }
  for (const name of APPS) {
    await expectApp(`${name}, ESM`, `${name}.mjs`, app);
    await expectApp(`${name}, CommonJS`, `${name}.cjs`, app);
    await expectApp(`${name}, TypeScript nodenext`, `out/nodenext/${name}.js`, app);
    await expectApp(`${name}, TypeScript node10`, `out/node10/${name}.js`, app);
    await expectApp(`${name}, esbuild bundle`, `out/bundle/${name}.cjs`, app);
  }
} finally {
  if (process.env.SLUICE_KEEP_SCRATCH === '1') step(`kept ${scratch}`);
  else await rm(scratch, { recursive: true, force: true });
}

if (problems.length > 0) {
  console.error(`consumer test failed:\n- ${problems.join('\n- ')}`);
  process.exit(1);
}
step('every tarball installs and every app limits');
