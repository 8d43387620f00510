import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { run } from './shell.js';

/**
 * The three module resolutions the packages must work under, as a user's tsconfig sets them:
 * `nodenext` (ESM here, emitted and run), `node10` with CommonJS output (emitted and run, as
 * `"module": "commonjs"` projects still do), and `bundler` (type-checked; esbuild bundles it).
 */
export const RESOLUTIONS = {
  nodenext: { module: 'nodenext', moduleResolution: 'nodenext', outDir: 'out/nodenext' },
  node10: { module: 'commonjs', moduleResolution: 'node10', esModuleInterop: true, outDir: 'out/node10' },
  bundler: { module: 'esnext', moduleResolution: 'bundler', noEmit: true },
} as const;

export type Resolution = keyof typeof RESOLUTIONS;

/**
 * Writes one tsconfig per resolution into the scratch project: strict, as `tsc --init` sets a
 * project up, and with `exactOptionalPropertyTypes`, as the strictest projects add.
 */
export async function writeTsconfigs(project: string): Promise<void> {
  for (const [name, options] of Object.entries(RESOLUTIONS)) {
    const tsconfig = {
      compilerOptions: {
        target: 'es2022',
        strict: true,
        exactOptionalPropertyTypes: true,
        skipLibCheck: true,
        types: ['node'],
        ...options,
      },
      include: ['ts'],
    };
    await writeFile(join(project, `tsconfig.${name}.json`), `${JSON.stringify(tsconfig, null, 2)}\n`);
  }
  // node10's output is CommonJS in a project whose package.json says "type": "module".
  await mkdir(join(project, 'out/node10'), { recursive: true });
  await writeFile(join(project, 'out/node10/package.json'), '{ "type": "commonjs" }\n');
}

/**
 * A module that loads every entry point of every packed package, so each one's types resolve under all three
 * resolutions and each loads by `import` (nodenext) and by `require` (node10's output).
 */
export async function writeEveryPackage(project: string, names: readonly string[]): Promise<void> {
  const imports = names.map((name, i) => `import * as package${i} from '${name}';`);
  const list = names.map((_, i) => `package${i}`).join(', ');
  const check = `const empty = [${list}].findIndex((exports) => Object.keys(exports).length === 0);
if (empty >= 0) throw new Error(\`\${${JSON.stringify(names)}[empty]} exports nothing\`);
`;
  await writeFile(join(project, 'ts/every-package.ts'), `${imports.join('\n')}\n\n${check}`);
}

/** Compiles with the scratch project's own TypeScript, as the user's would. */
export async function compile(project: string, resolution: Resolution): Promise<string | undefined> {
  try {
    await run(
      process.execPath,
      [join(project, 'node_modules/typescript/bin/tsc'), '-p', `tsconfig.${resolution}.json`],
      project,
    );
    return undefined;
  } catch (error) {
    return `TypeScript ${resolution}: ${(error as Error).message}`;
  }
}

/**
 * The errors in sluice's own declarations under the oldest TypeScript 5 (installed as `ts50`),
 * with `skipLibCheck` off: the declarations must load in every TypeScript 5 the README promises
 * (one named a library type that only 5.6 has). Errors in other packages' declarations are
 * theirs, and left out.
 */
export async function oldestDeclarationProblems(project: string): Promise<string | undefined> {
  const tsconfig = {
    compilerOptions: { ...RESOLUTIONS.nodenext, target: 'es2022', strict: true, types: ['node'], noEmit: true },
    files: ['ts/every-package.ts'],
  };
  await writeFile(join(project, 'tsconfig.declarations.json'), `${JSON.stringify(tsconfig, null, 2)}\n`);
  const output = await run(
    process.execPath,
    [join(project, 'node_modules/ts50/bin/tsc'), '-p', 'tsconfig.declarations.json'],
    project,
  ).catch((error: Error) => error.message);
  const ours = output.split('\n').filter((line) => line.includes('node_modules/@sluice/'));
  return ours.length === 0 ? undefined : `TypeScript 5.0, sluice's declarations:\n${ours.join('\n')}`;
}
