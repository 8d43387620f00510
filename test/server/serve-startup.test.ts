import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { freePort } from '../helpers/redis-server.js';
import { exitOf } from '../helpers/sluice-process.js';

const rules = new URL('./fixtures/edge.yaml', import.meta.url).pathname;

describe('sluice refuses to start, with a clear message and a non-zero exit', () => {
  it.each([
    ['a port that is not a number', ['serve', '--rules', rules, '--grpc-port', 'eighty'], '--grpc-port'],
    ['an unknown flag', ['serve', '--rules', rules, '--bogus'], 'bogus'],
    ['no --rules', ['serve'], '--rules'],
    [
      'both --redis and --redis-cluster',
      ['serve', '--rules', rules, '--redis', 'redis://a:1', '--redis-cluster', 'a:1'],
      '--redis',
    ],
    ['an unknown command', ['start'], 'unknown command'],
    // Regression: refused only once serving began, with exit 1.
    ['an empty --host', ['serve', '--rules', rules, '--host', ''], '--host'],
    // Regression: started, then failed at listen with exit 1 and DNS's ENOTFOUND.
    ['a --host with a port', ['serve', '--rules', rules, '--host', '127.0.0.1:80'], '--host'],
    // Regressions: a database that is no number crashed the process with an uncoded stack trace
    // (`SELECT NaN`), and a URL ioredis cannot parse failed with exit 1 and an uncoded error.
    [
      'a --redis database that is no number',
      ['serve', '--rules', rules, '--redis', 'redis://127.0.0.1:1/notadb'],
      '--redis',
    ],
    ['a --redis port out of range', ['serve', '--rules', rules, '--redis', 'redis://127.0.0.1:99999'], '--redis'],
    ['a --redis URL that does not parse', ['serve', '--rules', rules, '--redis', 'redis://[bad'], '--redis'],
  ])('exit 2 for %s', async (_, args, mention) => {
    const { code, output } = await exitOf(args);
    expect(code).toBe(2);
    expect(output).toContain(mention);
    expect(output).toContain('Usage: sluice serve');
  });

  it('exit 1 for a rules document with a mistake, naming the file, the line and the code', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-bad-rules-'));
    const file = join(dir, 'rules.yaml');
    writeFileSync(
      file,
      'domain: edge\ndescriptors:\n  - key: ip\n    rate_limit: { unit: minute, request_per_unit: 5 }\n',
    );
    const { code, output } = await exitOf(['serve', '--rules', file, '--grpc-port', '0', '--http-port', '0']);
    expect(code).toBe(1);
    expect(output).toContain('cannot start');
    expect(output).toContain('rules.yaml');
    expect(output).toContain(':4:');
    expect(output).toContain('requests_per_unit');
  });

  it('exit 1 for a rules path that does not exist', async () => {
    const { code, output } = await exitOf([
      'serve',
      '--rules',
      '/nonexistent/rules.yaml',
      '--grpc-port',
      '0',
      '--http-port',
      '0',
    ]);
    expect(code).toBe(1);
    expect(output).toContain('/nonexistent/rules.yaml');
  });

  it('exit 1 for a Redis nobody answers at', async () => {
    const port = await freePort();
    const { code, output } = await exitOf([
      'serve',
      '--rules',
      rules,
      '--redis',
      `redis://127.0.0.1:${port}`,
      '--grpc-port',
      '0',
      '--http-port',
      '0',
    ]);
    expect(code).toBe(1);
    expect(output).toContain(`Cannot reach Redis at redis://127.0.0.1:${port}`);
    expect(output).toContain('ERR_SLUICE_STORE_CONNECT');
  });

  it('exit 1 when a port is taken', async () => {
    const { createServer } = await import('node:net');
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const { port } = taken.address() as { port: number };
    const { code, output } = await exitOf([
      'serve',
      '--rules',
      rules,
      '--host',
      '127.0.0.1',
      '--grpc-port',
      '0',
      '--http-port',
      String(port),
    ]);
    taken.close();
    expect(code).toBe(1);
    expect(output).toContain('EADDRINUSE');
  });

  // Regression: grpc-js wrote its own plain-text lines ("E No address added …" for a port it
  // could not bind, traces asked for) among the service's JSON lines, which a log shipper
  // parsing each line as JSON drops or flags.
  it('exit 1 when the gRPC port is taken, every line of its log JSON, grpc-js traces included', async () => {
    const { createServer } = await import('node:net');
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const { port } = taken.address() as { port: number };
    const { code, output } = await exitOf(
      ['serve', '--rules', rules, '--host', '127.0.0.1', '--grpc-port', String(port), '--http-port', '0'],
      { GRPC_TRACE: 'server', GRPC_VERBOSITY: 'DEBUG' },
    );
    taken.close();
    expect(code).toBe(1);
    const lines = output.trim().split('\n');
    expect(lines.map((line) => JSON.parse(line).level)).toContain('error');
    expect(lines.find((line) => line.includes('"source":"grpc-js"'))).toContain('server');
    expect(output).toContain('EADDRINUSE');
  });
});
