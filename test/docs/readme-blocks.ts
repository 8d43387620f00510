import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

export interface CodeBlock {
  /** Where the block starts, as `path:line`, for the error report. */
  source: string;
  code: string;
}

/** The READMEs whose code a user copies: the root's, every package's and the examples'. */
export function readmes(workspace: string): string[] {
  const packageReadmes = readdirSync(join(workspace, 'packages')).map((dir) =>
    join(workspace, 'packages', dir, 'README.md'),
  );
  return [join(workspace, 'README.md'), join(workspace, 'examples/README.md'), ...packageReadmes].filter((file) =>
    existsSync(file),
  );
}

/** Every ```ts and ```js block (fenced with backticks), with the line it starts on. */
export function codeBlocks(file: string, workspace: string): CodeBlock[] {
  const blocks: CodeBlock[] = [];
  const lines = readFileSync(file, 'utf8').split('\n');
  let start = -1;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    if (start < 0 && /^```(ts|typescript|js|javascript)\s*$/.test(line)) start = i;
    else if (start >= 0 && line.startsWith('```')) {
      blocks.push({ source: `${relative(workspace, file)}:${start + 1}`, code: lines.slice(start + 1, i).join('\n') });
      start = -1;
    }
  }
  return blocks;
}
