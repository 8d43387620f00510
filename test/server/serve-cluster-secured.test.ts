import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseServeArgs } from '../../packages/server/src/cli-args.js';
import { createEnvoyClient } from '../helpers/envoy-client.js';
import { type RedisClusterHandle, startSecuredCluster } from '../helpers/redis-cluster.js';
import { isCi } from '../helpers/redis-env.js';
import { hasRedisServer } from '../helpers/redis-server.js';
import { exitOf, type ServingSluice, startSluice } from '../helpers/sluice-process.js';

const rules = new URL('./fixtures/edge.yaml', import.meta.url).pathname;
const tlsFile = (name: string) => new URL(`./fixtures/tls/${name}`, import.meta.url).pathname;
/** Characters a URL must encode, so the test shows they are decoded. */
const PASSWORD = 'p@ss word/1';
const encoded = encodeURIComponent(PASSWORD);
/** Node trusts the test CA as it would a private CA in production. */
const trustTestCa = { NODE_EXTRA_CA_CERTS: tlsFile('ca.pem') };

// Under CI a missing redis-server fails the suite rather than skipping it.
describe.skipIf(!hasRedisServer() && !isCi)('sluice serve on a Redis Cluster behind a password and TLS', () => {
  let cluster: RedisClusterHandle;
  let seeds: string;
  let sluice: ServingSluice | undefined;
  beforeAll(async () => {
    cluster = await startSecuredCluster({
      password: PASSWORD,
      tls: { cert: tlsFile('server.pem'), key: tlsFile('server-key.pem'), ca: tlsFile('ca.pem') },
    });
    seeds = cluster.nodes.map((n) => `${n.host}:${n.port}`).join(',');
  }, 60_000);
  afterAll(async () => {
    await sluice?.kill();
    await cluster?.stop();
  });

  it('publishes rules to it and serves them, counting there, and logs no password', async () => {
    const target = `rediss://default:${encoded}@${seeds}`;
    const published = await exitOf(
      ['publish-rules', '--rules', rules, '--rules-key', 'sluice:rules', '--redis-cluster', target],
      trustTestCa,
    );
    expect(published).toMatchObject({ code: 0, output: expect.stringMatching(/^\w+\n$/) });

    sluice = await startSluice(['--rules-key', 'sluice:rules', '--redis-cluster', target], 20_000, trustTestCa);
    const envoy = createEnvoyClient(sluice.grpcAddress);
    const codes = [];
    for (let i = 0; i < 4; i++) {
      const answer = await envoy.shouldRateLimit({
        domain: 'edge',
        descriptors: [{ entries: [{ key: 'remote_address', value: `192.0.2.${process.pid}` }] }],
      });
      codes.push(answer.overall_code);
    }
    envoy.close();
    expect(codes).toEqual(['OK', 'OK', 'OK', 'OVER_LIMIT']);
    expect(sluice.lines.find((line) => line.msg === 'connected to Redis')).toMatchObject({
      redis: `rediss://${seeds}`,
    });
    expect(sluice.output()).not.toContain(encoded);
    expect(sluice.output()).not.toContain(PASSWORD);
  });

  it('exit 1 for a wrong password, with the reason and without the password', async () => {
    const { code, output } = await exitOf(
      [
        'serve',
        '--rules',
        rules,
        '--grpc-port',
        '0',
        '--http-port',
        '0',
        '--redis-cluster',
        `rediss://:wrong@${seeds}`,
      ],
      trustTestCa,
    );
    expect(code).toBe(1);
    expect(output).toContain('Cannot reach Redis at rediss://');
    expect(output).toMatch(/WRONGPASS|NOAUTH|invalid password/i);
    expect(output).not.toContain('wrong');
  });
});

describe('--redis-cluster takes a scheme and credentials once, before the first node', () => {
  const serveWith = (cluster: string) => parseServeArgs(['--rules', rules, '--redis-cluster', cluster]);

  it.each([
    ['plain nodes', 'a:1,b:2', { tls: false }],
    ['redis://', 'redis://a:1,b:2', { tls: false }],
    ['rediss:// with a password', `rediss://:${encoded}@a:1,b:2`, { tls: true, password: PASSWORD }],
    ['a user and a password', `REDISS://bob:${encoded}@a:1,b:2`, { tls: true, username: 'bob', password: PASSWORD }],
    // Read as part of the first host, and shown in the error, where the password held a `/`.
    ['a password with / and a space', 'redis://:s3cr/et pw@a:1,b:2', { tls: false, password: 's3cr/et pw' }],
  ])('%s', (_, cluster, expected) => {
    expect(serveWith(cluster)).toMatchObject({
      redis: {
        nodes: [
          { host: 'a', port: 1 },
          { host: 'b', port: 2 },
        ],
        ...expected,
      },
    });
  });

  it.each([
    ['a user without a password', 'redis://bob@a:1', 'with a password'],
    ['no nodes after the credentials', 'rediss://:secret@', 'host:port'],
    ['a node without a port', 'rediss://:secret@a:1,b', 'host:port'],
  ])('refuses %s, showing no password', (_, cluster, mention) => {
    let message = '';
    try {
      serveWith(cluster);
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain(mention);
    expect(message).not.toContain('secret');
  });

  it('hides a password up to the last @ before the host, where the client splits an unencoded @', async () => {
    const { code, output } = await exitOf([
      'serve',
      '--rules',
      rules,
      '--redis',
      'redis://:hunter@2secret@h:1',
      '--bogus',
    ]);
    expect(code).toBe(2);
    expect(output).toContain('redis://:***@h:1');
    expect(output).not.toContain('secret');
    expect(output).not.toContain('hunter');
  });

  it.each(['redis://u:pa/ss@h:1', 'redis://:pa ss@h:1'])(
    'hides a password holding / or a space: %s (it was shown)',
    async (url) => {
      const { code, output } = await exitOf(['serve', '--rules', rules, '--redis', url, '--bogus']);
      expect(code).toBe(2);
      expect(output).toMatch(/redis:\/\/u?:\*\*\*@h:1/);
      expect(output).not.toContain(url.slice(url.indexOf(':', 6) + 1, url.lastIndexOf('@')));
    },
  );

  it('a bad command line is echoed with any Redis password hidden', async () => {
    const { code, output } = await exitOf(['serve', '--rules', rules, '--redis', 'redis://:secret@h:1', '--bogus']);
    expect(code).toBe(2);
    expect(output).toContain('redis://:***@h:1');
    expect(output).not.toContain('secret');
  });
});
