import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { expect, it } from 'vitest';
import { parseServeArgs, type ServeFlags } from '../../packages/server/src/cli-args.js';
import { serve } from '../../packages/server/src/serve.js';

const rule = (domain: string) =>
  `domain: ${domain}\ndescriptors:\n  - key: k\n    rate_limit: { unit: minute, requests_per_unit: 5 }\n`;

// envoyproxy/ratelimit reads every file under its config directory: a file of rules named
// otherwise was left out without a word, and every call of its domain answered OK.
it('sluice serve names the files under --rules it did not read as rules', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-unread-'));
  writeFileSync(join(dir, 'a.yaml'), rule('a'));
  writeFileSync(join(dir, 'ratelimit'), rule('b'));
  mkdirSync(join(dir, 'nested'));
  writeFileSync(join(dir, 'nested', 'c.yml'), rule('c'));
  writeFileSync(join(dir, 'nested', 'limits.conf'), rule('d'));
  // Skipped by both: a dot name (a ConfigMap volume's `..data`), and a link to a directory.
  writeFileSync(join(dir, '.hidden'), rule('e'));
  symlinkSync(join(dir, 'nested'), join(dir, 'linked'));
  const lines: { level: string; message: string; fields: Record<string, unknown> | undefined }[] = [];
  const log = {
    line: (level: string, message: string, fields?: Record<string, unknown>) => lines.push({ level, message, fields }),
    warn: () => {},
  };
  const flags = parseServeArgs(['--rules', dir, '--grpc-port', '0', '--http-port', '0', '--host', '127.0.0.1']);
  const running = await serve(flags as ServeFlags, log);
  try {
    expect(lines.filter((line) => line.level === 'warn')).toEqual([
      {
        level: 'warn',
        message: 'files under --rules not read: only .yaml, .yml and .json files hold rules',
        fields: { files: [join(dir, 'nested', 'limits.conf'), join(dir, 'ratelimit')] },
      },
    ]);
  } finally {
    await running.stop();
  }
});

// The files read were compared with the walk by path, and a watcher names them absolute: given
// a relative --rules (the README's `./rules`), every rules file it had read was named as not read.
it('sluice serve given a relative --rules names only the files it left out', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-unread-'));
  writeFileSync(join(dir, 'a.yaml'), rule('a'));
  writeFileSync(join(dir, 'README.txt'), 'notes');
  const given = relative(process.cwd(), dir);
  const lines: { level: string; fields: Record<string, unknown> | undefined }[] = [];
  const log = {
    line: (level: string, _: string, fields?: Record<string, unknown>) => lines.push({ level, fields }),
    warn: () => {},
  };
  const flags = parseServeArgs(['--rules', given, '--grpc-port', '0', '--http-port', '0', '--host', '127.0.0.1']);
  const running = await serve(flags as ServeFlags, log);
  try {
    expect(lines.filter((line) => line.level === 'warn')).toEqual([
      { level: 'warn', fields: { files: [join(given, 'README.txt')] } },
    ]);
  } finally {
    await running.stop();
  }
});
