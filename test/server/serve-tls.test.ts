import { createPrivateKey, X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentials, type ServiceError, status } from '@grpc/grpc-js';
import { createLimiter } from '@sluice/core';
import { parseRules } from '@sluice/rules';
import { createDecisionServer, createServiceClient } from '@sluice/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readTls } from '../../packages/server/src/tls.js';
import { createEnvoyClient, createHealthClient } from '../helpers/envoy-client.js';
import { exitOf, type ServingSluice, startSluice } from '../helpers/sluice-process.js';

const rules = new URL('./fixtures/edge.yaml', import.meta.url).pathname;
const file = (name: string) => new URL(`./fixtures/tls/${name}`, import.meta.url).pathname;
const pem = (name: string) => readFileSync(file(name));
const quiet = { warn: () => {} };
/** What a client that trusts the test CA presents: nothing, or the named certificate. */
const trusting = (ca: string, client?: string) =>
  client === undefined
    ? credentials.createSsl(pem(ca))
    : credentials.createSsl(pem(ca), pem(`${client}-key.pem`), pem(`${client}.pem`));

let run = 0;
const fresh = () => `198.51.100.${++run}-${process.pid}`;
const askOnce = async (address: string, channel: ReturnType<typeof credentials.createInsecure>) => {
  const envoy = createEnvoyClient(address, channel);
  try {
    const answer = await envoy.shouldRateLimit({
      domain: 'edge',
      descriptors: [{ entries: [{ key: 'remote_address', value: fresh() }] }],
    });
    return answer.overall_code;
  } catch (error) {
    return (error as ServiceError).code;
  } finally {
    envoy.close();
  }
};

/** `sluice serve`'s flags for gRPC over TLS with the test service certificate. */
const servingTls = ['--rules', rules, '--tls-cert', file('server.pem'), '--tls-key', file('server-key.pem')];

describe('sluice serve --tls-cert --tls-key: gRPC over TLS', () => {
  let sluice: ServingSluice;
  beforeAll(async () => {
    sluice = await startSluice(servingTls);
  });
  afterAll(() => sluice?.kill());

  it('answers a client that trusts its CA, and logs what it serves', async () => {
    expect(await askOnce(sluice.grpcAddress, trusting('ca.pem'))).toBe('OK');
    const health = createHealthClient(sluice.grpcAddress, trusting('ca.pem'));
    expect(await health.check()).toBe('SERVING');
    health.close();
    expect(sluice.lines.find((line) => line.msg === 'gRPC over TLS')).toMatchObject({
      subject: 'CN=sluice service',
      validTo: expect.stringMatching(/^21\d\d-/),
      clientCertificates: 'not asked',
    });
  });

  it('refuses a plain-text client and one that does not trust its certificate', async () => {
    expect(await askOnce(sluice.grpcAddress, credentials.createInsecure())).toBe(status.UNAVAILABLE);
    expect(await askOnce(sluice.grpcAddress, trusting('other-ca.pem'))).toBe(status.UNAVAILABLE);
  });

  it('serves a limiter through the service client over TLS, counting as the rules say', async () => {
    const store = createServiceClient({
      address: sluice.grpcAddress,
      domain: 'edge',
      credentials: trusting('ca.pem'),
      logger: quiet,
    });
    const limiter = createLimiter({
      store,
      policies: [{ name: 'remote_address', limit: 3, window: '1h' }],
      onStoreError: 'throw',
      storeTimeoutMs: 5000,
    });
    const key = fresh();
    const allowed = [];
    for (let i = 0; i < 4; i++) allowed.push((await limiter.consume(key)).allowed);
    expect(allowed).toEqual([true, true, true, false]);
    await store.close();
  });

  // A call waiting for its connection ended with grpc-js's "Deadline exceeded … Waiting for LB
  // pick": nothing said the client did not trust the service's certificate.
  it("the service client's ready() names why it could not connect", async () => {
    const store = createServiceClient({
      address: sluice.grpcAddress,
      domain: 'edge',
      credentials: trusting('other-ca.pem'),
      deadlineMs: 300,
      logger: quiet,
    });
    await expect(store.ready()).rejects.toMatchObject({
      code: 'ERR_SLUICE_STORE_UNAVAILABLE',
      message: expect.stringContaining(
        'did not answer within 300 ms: No connection established. Last error: Error: unable to verify',
      ),
    });
    await store.close();
  });
});

describe('sluice serve --tls-client-ca: mutual TLS', () => {
  let sluice: ServingSluice;
  beforeAll(async () => {
    sluice = await startSluice([...servingTls, '--tls-client-ca', file('ca.pem')]);
  });
  afterAll(() => sluice?.kill());

  it('answers only a client whose certificate the CA signed', async () => {
    expect(await askOnce(sluice.grpcAddress, trusting('ca.pem', 'client'))).toBe('OK');
    expect(await askOnce(sluice.grpcAddress, trusting('ca.pem'))).toBe(status.UNAVAILABLE);
    expect(await askOnce(sluice.grpcAddress, trusting('ca.pem', 'stranger'))).toBe(status.UNAVAILABLE);
    expect(sluice.lines.find((line) => line.msg === 'gRPC over TLS')).toMatchObject({ clientCertificates: 'required' });
  });
});

describe('certificates that cannot serve stop start-up', () => {
  it.each([
    [
      'a key that is not the certificate’s',
      'server.pem',
      'client-key.pem',
      '--tls-key',
      'is not the key of the certificate',
    ],
    ['an expired certificate', 'expired.pem', 'expired-key.pem', '--tls-cert', 'expired Jan  1 00:00:00 2021 GMT'],
    [
      'a key where the certificate belongs',
      'server-key.pem',
      'server-key.pem',
      '--tls-cert',
      'holds no PEM certificate',
    ],
    ['a certificate where the key belongs', 'server.pem', 'server.pem', '--tls-key', 'holds no PEM private key'],
    ['a file that is not there', 'server.pem', 'absent-key.pem', '--tls-key', 'cannot be read (ENOENT)'],
    // X509Certificate reads it; gRPC failed at start-up with OpenSSL's bare "ee key too small".
    [
      'a key OpenSSL will not serve',
      'weak.pem',
      'weak-key.pem',
      '--tls-cert',
      `cannot be served with the key in ${file('weak-key.pem')}: OpenSSL refuses it (error:0A00018F:SSL routines::ee key too small)`,
    ],
  ])('%s', async (_, cert, key, flag, why) => {
    const refused = readTls({ cert: file(cert), key: file(key) });
    await expect(refused).rejects.toMatchObject({
      code: 'ERR_SLUICE_INVALID_SERVER_OPTION',
      message: expect.stringContaining(`[sluice] ${flag} ${file(flag === '--tls-cert' ? cert : key)}: ${why}`),
    });
  });

  // OpenSSL, given no passphrase, says only "interrupted or cancelled": it was reported as no key at all.
  it.each([
    ['PKCS #8', 'pkcs8'],
    ['traditional', 'sec1'],
  ] as const)('an encrypted private key (%s), which gRPC cannot unlock', async (_, type) => {
    const encrypted = join(mkdtempSync(join(tmpdir(), 'sluice-key-')), 'key.pem');
    const key = createPrivateKey(pem('server-key.pem'));
    writeFileSync(encrypted, key.export({ format: 'pem', type, cipher: 'aes-256-cbc', passphrase: 'secret' }));
    await expect(readTls({ cert: file('server.pem'), key: encrypted })).rejects.toMatchObject({
      code: 'ERR_SLUICE_INVALID_SERVER_OPTION',
      message: expect.stringContaining(
        `--tls-key ${encrypted}: holds an encrypted private key, and gRPC takes no passphrase`,
      ),
    });
  });

  it('a certificate in DER, which gRPC cannot read (it failed with OpenSSL\'s bare "no start line")', async () => {
    const der = join(mkdtempSync(join(tmpdir(), 'sluice-der-')), 'server.der');
    writeFileSync(der, new X509Certificate(readFileSync(file('server.pem'))).raw);
    await expect(readTls({ cert: der, key: file('server-key.pem') })).rejects.toMatchObject({
      code: 'ERR_SLUICE_INVALID_SERVER_OPTION',
      message: expect.stringContaining(`--tls-cert ${der}: holds no PEM certificate`),
    });
  });

  // Only the first certificate was read: a damaged one after it failed start-up with OpenSSL's
  // bare "bad base64 decode" (--tls-cert), or was skipped unsaid (--tls-client-ca).
  it.each([
    [
      '--tls-cert',
      'a damaged certificate, number 2 of 2',
      '-----BEGIN CERTIFICATE-----\nAAAAgarbage\n-----END CERTIFICATE-----\n',
    ],
    [
      '--tls-client-ca',
      'a damaged certificate, number 2 of 2',
      '-----BEGIN CERTIFICATE-----\nAAAAgarbage\n-----END CERTIFICATE-----\n',
    ],
    ['--tls-cert', 'a certificate with no end line, number 2 in the file', '-----BEGIN CERTIFICATE-----\nMIIB\n'],
  ])('%s holding %s', async (flag, why, after) => {
    const chain = join(mkdtempSync(join(tmpdir(), 'sluice-chain-')), 'chain.pem');
    writeFileSync(chain, readFileSync(file(flag === '--tls-cert' ? 'server.pem' : 'ca.pem'), 'latin1') + after);
    const files =
      flag === '--tls-cert'
        ? { cert: chain, key: file('server-key.pem') }
        : { cert: file('server.pem'), key: file('server-key.pem'), clientCa: chain };
    await expect(readTls(files)).rejects.toMatchObject({
      code: 'ERR_SLUICE_INVALID_SERVER_OPTION',
      message: expect.stringContaining(`[sluice] ${flag} ${chain}: holds ${why}`),
    });
  });

  it('a client CA file that holds no certificate', async () => {
    await expect(
      readTls({ cert: file('server.pem'), key: file('server-key.pem'), clientCa: file('client-key.pem') }),
    ).rejects.toMatchObject({ message: expect.stringContaining('--tls-client-ca') });
  });

  it('a certificate not yet valid', async () => {
    await expect(
      readTls({ cert: file('server.pem'), key: file('server-key.pem') }, new Date('2000-01-01T00:00:00Z')),
    ).rejects.toMatchObject({ message: expect.stringContaining('is not valid before') });
  });

  it('exit 1 from sluice serve, naming the file and why', async () => {
    const { code, output } = await exitOf([
      'serve',
      '--rules',
      rules,
      '--grpc-port',
      '0',
      '--http-port',
      '0',
      '--tls-cert',
      file('expired.pem'),
      '--tls-key',
      file('expired-key.pem'),
    ]);
    expect(code).toBe(1);
    expect(output).toContain('cannot start');
    expect(output).toContain('expired.pem: expired');
  });

  it.each([
    ['--tls-cert without --tls-key', ['--tls-cert', file('server.pem')], '--tls-key'],
    ['--tls-key without --tls-cert', ['--tls-key', file('server-key.pem')], '--tls-cert'],
    ['--tls-client-ca alone', ['--tls-client-ca', file('ca.pem')], '--tls-client-ca'],
  ])('exit 2 for %s', async (_, flags, mention) => {
    const { code, output } = await exitOf(['serve', '--rules', rules, ...flags]);
    expect(code).toBe(2);
    expect(output).toContain(mention);
  });

  // `null`, as a loader that found no certificate gives, served plaintext gRPC.
  it.each([{}, null])('createDecisionServer refuses grpcCredentials %o, which are no ServerCredentials', (given) => {
    const ruleSet = parseRules('domain: d\ndescriptors: []\n');
    expect(() => createDecisionServer({ rules: ruleSet, grpcCredentials: given as never })).toThrow(
      expect.objectContaining({
        code: 'ERR_SLUICE_INVALID_SERVER_OPTION',
        message: expect.stringContaining('`grpcCredentials`'),
      }),
    );
  });

  // Found by the first rule's limiter, a bad store or clock read as a problem of the rules file.
  it.each([
    ['store', { store: {} }],
    ['store', { store: { name: 'x' } }],
    ['clock', { clock: () => -1 }],
  ])('createDecisionServer refuses a bad %s as its own option, not the rules', (option, given) => {
    const ruleSet = parseRules(
      'domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, requests_per_unit: 1 }\n',
    );
    expect(() => createDecisionServer({ rules: ruleSet, ...given } as never)).toThrow(
      expect.objectContaining({
        code: 'ERR_SLUICE_INVALID_SERVER_OPTION',
        message: expect.stringContaining(`\`${option}\``),
      }),
    );
  });
});
