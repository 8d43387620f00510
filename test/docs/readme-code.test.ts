import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { codeBlocks, readmes } from './readme-blocks.js';

const workspace = join(dirname(fileURLToPath(import.meta.url)), '../..');
const tsc = join(workspace, 'node_modules/typescript/bin/tsc');
const packageDirs = () => readdirSync(join(workspace, 'packages')).map((dir) => join(workspace, 'packages', dir));

/** Runs node with the arguments; resolves with the compiler's complaints, '' when none. */
const run = (args: string[]) =>
  promisify(execFile)(process.execPath, args).then(
    () => '',
    (error: { stdout?: string }) => error.stdout ?? String(error),
  );

// Regression (issue 13): README examples used undefined names (`login`, `redis`, `userId`)
// and did not compile under strict TypeScript. Each block must now type-check on its own,
// as a module of a strict project, exactly as written, against the built packages' types:
// what a user's editor sees.
describe('README code', () => {
  it('every ts/js block in the READMEs type-checks on its own', async () => {
    await run([tsc, '-b', ...packageDirs()]);
    const blocks = readmes(workspace).flatMap((file) => codeBlocks(file, workspace));
    expect(blocks.length).toBeGreaterThan(10);
    // Inside the workspace, so the blocks resolve @sluice/* and the frameworks as a user's app would.
    const dir = await mkdtemp(join(workspace, '.readme-code-'));
    try {
      const files = await Promise.all(
        blocks.map(async (block, i) => {
          const file = `${String(i).padStart(2, '0')}-${block.source.replace(/[/:.]/g, '-')}.ts`;
          // `export {}` keeps each block a module of its own, as a file of the user's app would be.
          await writeFile(join(dir, file), `${block.code}\nexport {};\n`);
          return file;
        }),
      );
      const compilerOptions = { noEmit: true, customConditions: [] };
      const tsconfig = { extends: '../tsconfig.base.json', compilerOptions, files };
      await writeFile(join(dir, 'tsconfig.json'), JSON.stringify(tsconfig));
      await writeFile(join(dir, 'package.json'), '{ "type": "module" }\n');
      expect(await run([tsc, '-p', dir])).toBe('');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
