import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnvoyClient } from '../helpers/envoy-client.js';
import { isCi } from '../helpers/redis-env.js';
import { hasRedisServer, type RedisServer, startRedisServer, waitFor } from '../helpers/redis-server.js';
import { exitOf, startSluice } from '../helpers/sluice-process.js';

const skip = !hasRedisServer() && !isCi;
const perIp = (limit: number) =>
  `domain: edge\ndescriptors:\n  - key: ip\n    rate_limit: { unit: hour, requests_per_unit: ${limit} }\n`;

// A fleet of decision services sharing one rule set from Redis: `sluice publish-rules` stores
// it, every `sluice serve --rules-key` reloads it.
describe.skipIf(skip)('rules in Redis: sluice publish-rules and sluice serve --rules-key', () => {
  let redis: RedisServer;
  let admin: Redis;
  let dir: string;
  const rulesFile = (name: string, text: string) => {
    const file = join(dir, name);
    writeFileSync(file, text);
    return file;
  };
  beforeAll(async () => {
    redis = await startRedisServer();
    admin = new Redis(redis.url);
    dir = mkdtempSync(join(tmpdir(), 'sluice-rules-redis-'));
  });
  afterAll(async () => {
    admin?.disconnect();
    await redis?.stop();
  });

  const publish = (file: string, key: string) =>
    exitOf(['publish-rules', '--rules', file, '--rules-key', key, '--redis', redis.url]);

  it('every server of a fleet serves the published rules and follows the next publish', async () => {
    expect((await publish(rulesFile('first.yaml', perIp(3)), 'fleet')).code).toBe(0);
    const fleet = [
      await startSluice(['--rules-key', 'fleet', '--redis', redis.url]),
      await startSluice(['--rules-key', 'fleet', '--redis', redis.url]),
    ];
    const clients = fleet.map((sluice) => createEnvoyClient(sluice.grpcAddress));
    const limits = (value: string) =>
      Promise.all(
        clients.map(async (client) => {
          const response = await client.shouldRateLimit({
            domain: 'edge',
            descriptors: [{ entries: [{ key: 'ip', value }] }],
          });
          return response.statuses?.[0]?.current_limit?.requests_per_unit;
        }),
      );
    try {
      expect(await limits('a')).toEqual([3, 3]);
      const published = await publish(rulesFile('second.yaml', perIp(7)), 'fleet');
      expect(published.code).toBe(0);
      expect(published.output.trim()).toBe(await admin.hget('fleet', 'version'));
      await waitFor('every server to reload', async () => (await limits('b')).every((limit) => limit === 7));
      expect(fleet.map((s) => s.lines.filter((l) => l.msg === 'rules reloaded').length)).toEqual([1, 1]);
    } finally {
      for (const client of clients) client.close();
      await Promise.all(fleet.map((sluice) => sluice.kill()));
    }
  });

  it('publish-rules refuses a document with a mistake, naming the file and line, and changes nothing', async () => {
    expect((await publish(rulesFile('good.yaml', perIp(3)), 'checked')).code).toBe(0);
    const version = await admin.hget('checked', 'version');
    const misspelt = perIp(5).replace('requests_per_unit', 'request_per_unit');
    const { code, output } = await publish(rulesFile('bad.yaml', misspelt), 'checked');
    expect(code).toBe(1);
    expect(output).toContain('bad.yaml:4:');
    expect(output).toContain('ERR_SLUICE_RULES_UNKNOWN_KEY');
    // Once: the rules error names each problem's code in its message already.
    const unknown = await publish(rulesFile('unknown.yaml', 'domain: d\nunit: day\n'), 'checked');
    expect(unknown.output.match(/ERR_SLUICE_RULES_UNKNOWN_KEY/g)).toHaveLength(1);
    expect(await admin.hget('checked', 'version')).toBe(version);
  });

  // Only parsed, a rule of 17 policies was stored and announced: every replica refused the reload,
  // and every replica that started afterwards failed to start.
  it('publish-rules refuses a rule the Redis store cannot decide, as sluice serve loads it, and changes nothing', async () => {
    expect((await publish(rulesFile('small.yaml', perIp(3)), 'store-checked')).code).toBe(0);
    const version = await admin.hget('store-checked', 'version');
    const policies = Array.from({ length: 17 }, (_, i) => `      - { name: p${i}, limit: ${i + 1}, window: 1m }`);
    const wide = `domain: edge\ndescriptors:\n  - key: ip\n    policies:\n${policies.join('\n')}\n`;
    const { code, output } = await publish(rulesFile('wide.yaml', wide), 'store-checked');
    expect(code).toBe(1);
    expect(output).toContain('wide.yaml:3:');
    expect(output).toContain('ERR_SLUICE_RULES_INVALID_POLICY');
    expect(output).toContain('1 to 16 policies');
    expect(await admin.hget('store-checked', 'version')).toBe(version);
  });

  // Regression: a directory failed with Node's bare "EISDIR: illegal operation on a directory, read".
  it('publish-rules refuses a directory, saying it takes one file', async () => {
    const { code, output } = await exitOf(['publish-rules', '--rules', dir, '--rules-key', 'k', '--redis', redis.url]);
    expect(code).toBe(1);
    expect(output).toContain(`Cannot read --rules ${dir}: it is a directory; publish-rules stores one document`);
  });

  // Stored with its bad bytes as U+FFFD, the rule matched no request on every server.
  it('publish-rules refuses a file that is not UTF-8, as loadRules does, and changes nothing', async () => {
    const latin1 = join(dir, 'latin1.yaml');
    writeFileSync(latin1, Buffer.from(perIp(3).replace('key: ip', 'key: caf\u00e9'), 'latin1'));
    const { code, output } = await publish(latin1, 'not-utf8');
    expect(code).toBe(1);
    expect(output).toContain(`Cannot read --rules ${latin1}: it is not UTF-8 text.`);
    expect(await admin.exists('not-utf8')).toBe(0);
  });

  it('serve exits 1 when the key holds no rules, naming it', async () => {
    const ports = ['--grpc-port', '0', '--http-port', '0'];
    const { code, output } = await exitOf(['serve', '--rules-key', 'nothing-here', '--redis', redis.url, ...ports]);
    expect(code).toBe(1);
    expect(output).toContain('nothing-here');
    expect(output).toContain('ERR_SLUICE_RULES_READ');
  });

  it.each([
    ['--rules-key without a Redis', ['serve', '--rules-key', 'k'], '--rules-key'],
    [
      'both --rules and --rules-key',
      ['serve', '--rules', 'r.yaml', '--rules-key', 'k', '--redis', 'redis://a:1'],
      '--rules-key',
    ],
    [
      'publish-rules without --rules-key',
      ['publish-rules', '--rules', 'r.yaml', '--redis', 'redis://a:1'],
      '--rules-key',
    ],
    ['publish-rules without a Redis', ['publish-rules', '--rules', 'r.yaml', '--rules-key', 'k'], '--redis'],
  ])('exit 2 for %s', async (_, args, mention) => {
    const { code, output } = await exitOf(args);
    expect(code).toBe(2);
    expect(output).toContain(mention);
    // The code scripts match on, as every other start-up failure gives it.
    expect(output).toContain('(ERR_SLUICE_INVALID_SERVER_OPTION)');
    expect(output).toContain('Usage: sluice serve');
  });

  it('publish-rules that cannot reach Redis exits 1 with the code', async () => {
    const file = rulesFile('unsent.yaml', perIp(3));
    const { code, output } = await exitOf([
      'publish-rules',
      '--rules',
      file,
      '--rules-key',
      'k',
      '--redis',
      'redis://127.0.0.1:1',
    ]);
    expect(code).toBe(1);
    expect(output).toMatch(
      /^sluice: cannot publish: \[sluice\] Cannot reach Redis at .*\(ERR_SLUICE_STORE_CONNECT\)$/m,
    );
  });
});
