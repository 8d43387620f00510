import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { type ChannelCredentials, credentials, type ServiceError, status } from '@grpc/grpc-js';
import { parseRules } from '@sluice/rules';
import { createDecisionServer } from '@sluice/server';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { parseServeArgs, type ServeFlags } from '../../packages/server/src/cli-args.js';
import { serve } from '../../packages/server/src/serve.js';
import { EXPIRY_WARNING_MS, serveTls } from '../../packages/server/src/tls-watch.js';
import { createEnvoyClient } from '../helpers/envoy-client.js';

const fixture = (name: string) => new URL(`./fixtures/tls/${name}`, import.meta.url).pathname;
const rulesFile = new URL('./fixtures/edge.yaml', import.meta.url).pathname;
const trusting = (ca: string) => credentials.createSsl(readFileSync(fixture(ca)));
const DAY = 24 * 60 * 60 * 1000;

interface Line {
  level: string;
  message: string;
  fields: Record<string, unknown> | undefined;
}
let lines: Line[];
const log = {
  line: (level: string, message: string, fields?: Record<string, unknown>) => lines.push({ level, message, fields }),
  warn: () => {},
};
const said = (level: string) => lines.filter((line) => line.level === level);

/** The service's TLS files, in a directory of their own that the test renews in place. */
let dir: string;
const files = () => ({ cert: join(dir, 'tls.crt'), key: join(dir, 'tls.key') });
const install = (cert: string, key: string) => {
  copyFileSync(fixture(cert), files().cert);
  copyFileSync(fixture(key), files().key);
};
beforeEach(() => {
  lines = [];
  dir = mkdtempSync(join(tmpdir(), 'sluice-tls-renewal-'));
  install('server.pem', 'server-key.pem');
});

let run = 0;
const ask = async (address: string, channel: ChannelCredentials) => {
  const envoy = createEnvoyClient(address, channel);
  try {
    const answer = await envoy.shouldRateLimit({
      domain: 'edge',
      descriptors: [{ entries: [{ key: 'remote_address', value: `198.51.100.${++run}-${process.pid}` }] }],
    });
    return answer.overall_code;
  } catch (error) {
    return (error as ServiceError).code;
  } finally {
    envoy.close();
  }
};

/** A decision service on the files, whose watch the test drives: its interval never fires. */
async function serving() {
  const tls = await serveTls(files());
  const server = createDecisionServer({
    rules: parseRules(readFileSync(rulesFile, 'utf8')),
    grpcPort: 0,
    httpPort: 0,
    host: '127.0.0.1',
    grpcCredentials: tls.credentials,
    log,
  });
  const { grpcPort } = await server.listen();
  const watch = tls.watch(log, { intervalMs: DAY });
  const close = () => {
    watch.close();
    return server.close();
  };
  return { address: `127.0.0.1:${grpcPort}`, watch, close };
}

// A certificate was read once, at start-up: one renewed in place (cert-manager, a mounted
// Secret) was served only after a restart, and until then every new handshake failed once the
// old one expired.
it('serves a certificate renewed in place from the next handshake; connections open keep theirs', async () => {
  const service = await serving();
  try {
    const open = createEnvoyClient(service.address, trusting('ca.pem'));
    const keep = () => open.shouldRateLimit({ domain: 'edge', descriptors: [{ entries: [{ key: 'k', value: 'v' }] }] });
    expect((await keep()).overall_code).toBe('OK');
    expect(await ask(service.address, trusting('ca.pem'))).toBe('OK');

    install('renewed.pem', 'renewed-key.pem');
    await service.watch.check();
    expect(lines.find((line) => line.message === 'TLS certificate reloaded')?.fields).toMatchObject({
      subject: 'CN=sluice service renewed',
    });
    expect(await ask(service.address, trusting('renewed.pem'))).toBe('OK');
    expect(await ask(service.address, trusting('ca.pem'))).toBe(status.UNAVAILABLE);
    expect((await keep()).overall_code).toBe('OK');
    open.close();
  } finally {
    await service.close();
  }
});

it('keeps serving the last good certificate when the files fail the checks, saying why once they fail twice', async () => {
  const service = await serving();
  const errors = () => said('error').map((line) => line.fields?.error);
  try {
    // Renewed halfway: the new certificate with the old key. Caught once while being written, it says nothing.
    copyFileSync(fixture('renewed.pem'), files().cert);
    await service.watch.check();
    expect(errors()).toEqual([]);
    await service.watch.check();
    await service.watch.check();
    expect(said('error')).toEqual([
      {
        level: 'error',
        message: 'TLS files not reloaded; serving the last good certificate',
        fields: {
          error: expect.stringContaining(`--tls-key ${files().key}: is not the key of the certificate`),
          validTo: '2126-11-10T22:38:59.000Z',
        },
      },
    ]);
    expect(await ask(service.address, trusting('ca.pem'))).toBe('OK');

    // Other files failing the same way are said too: each content once.
    copyFileSync(fixture('client-key.pem'), files().key);
    await service.watch.check();
    await service.watch.check();
    expect(errors()).toHaveLength(2);

    // The key follows: served.
    copyFileSync(fixture('renewed-key.pem'), files().key);
    await service.watch.check();
    expect(await ask(service.address, trusting('renewed.pem'))).toBe('OK');

    // Damaged, unreadable, then a key OpenSSL will not serve (gRPC took it, and dropped every
    // connection after): each said once, and the renewed certificate still served.
    writeFileSync(files().cert, '-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n');
    await service.watch.check();
    await service.watch.check();
    copyFileSync(fixture('renewed.pem'), files().cert);
    rmSync(files().key);
    await service.watch.check();
    await service.watch.check();
    install('weak.pem', 'weak-key.pem');
    await service.watch.check();
    await service.watch.check();
    await service.watch.check();
    expect(errors().slice(2)).toEqual([
      expect.stringContaining(`--tls-cert ${files().cert}: holds no PEM certificate`),
      expect.stringContaining(`--tls-key ${files().key}: cannot be read (ENOENT)`),
      expect.stringContaining(
        `--tls-cert ${files().cert}: cannot be served with the key in ${files().key}: OpenSSL refuses it`,
      ),
    ]);
    expect(errors()[4]).toContain('ee key too small');
    expect(await ask(service.address, trusting('renewed.pem'))).toBe('OK');
  } finally {
    await service.close();
  }
});

// The failed files were remembered as seen: a certificate a few seconds ahead of this host's
// clock was refused once and never looked at again, the old one served until it expired.
it('serves a renewed certificate that was not valid yet once it is', async () => {
  let now = new Date('2026-01-01T00:00:00Z');
  const tls = await serveTls(files());
  const watch = tls.watch(log, { intervalMs: DAY, now: () => now });
  try {
    install('renewed.pem', 'renewed-key.pem');
    await watch.check();
    await watch.check();
    expect(said('error')[0]?.fields?.error).toContain('is not valid before');
    now = new Date();
    await watch.check();
    expect(lines.at(-1)).toMatchObject({
      message: 'TLS certificate reloaded',
      fields: { subject: 'CN=sluice service renewed' },
    });
  } finally {
    watch.close();
  }
});

// Only the same failure twice in a row was logged: files failing two ways by turns (a key
// from one renewal, then another's; a missing file, then a wrong key) were never logged.
it('says each way the files fail once two reads in a row have failed, however they take turns', async () => {
  const service = await serving();
  const errors = () => said('error').map((line) => String(line.fields?.error));
  try {
    copyFileSync(fixture('renewed.pem'), files().cert);
    for (let i = 0; i < 3; i++) {
      copyFileSync(fixture('client-key.pem'), files().key);
      await service.watch.check();
      rmSync(files().key);
      await service.watch.check();
    }
    expect(errors()).toEqual([
      expect.stringContaining('cannot be read (ENOENT)'),
      expect.stringContaining('is not the key of the certificate'),
    ]);
    expect(await ask(service.address, trusting('ca.pem'))).toBe('OK');
  } finally {
    await service.close();
  }
});

// Checked without gRPC's cipher list, which may set OpenSSL's security level, a renewal that
// level refuses was logged as reloaded while grpc-js dropped every connection; and files the
// list allows were refused at start-up.
it('checks the files at the security level GRPC_SSL_CIPHER_SUITES sets, and names a list OpenSSL cannot use', async () => {
  install('weak.pem', 'weak-key.pem');
  vi.stubEnv('GRPC_SSL_CIPHER_SUITES', 'DEFAULT@SECLEVEL=0');
  try {
    await expect(serveTls(files())).resolves.toMatchObject({ described: { subject: 'CN=sluice service weak key' } });
    vi.stubEnv('GRPC_SSL_CIPHER_SUITES', 'NOT-A-CIPHER');
    await expect(serveTls(files())).rejects.toMatchObject({
      code: 'ERR_SLUICE_INVALID_SERVER_OPTION',
      message: expect.stringContaining('GRPC_SSL_CIPHER_SUITES "NOT-A-CIPHER": OpenSSL refuses it'),
    });
  } finally {
    vi.unstubAllEnvs();
  }
});

// Node's setSecureContext takes its cipher list from the options it is given alone: from the
// first renewal, the server offered Node's default list where GRPC_SSL_CIPHER_SUITES had narrowed it.
it('keeps the cipher list GRPC_SSL_CIPHER_SUITES sets across a renewal', async () => {
  vi.stubEnv('GRPC_SSL_CIPHER_SUITES', 'ECDHE-ECDSA-AES128-GCM-SHA256');
  const service = await serving();
  vi.unstubAllEnvs();
  const [host, port] = service.address.split(':') as [string, string];
  const handshake = (cipher: string) =>
    new Promise<string>((resolve) => {
      const socket = connect({
        host,
        port: Number(port),
        ciphers: cipher,
        maxVersion: 'TLSv1.2',
        ALPNProtocols: ['h2'],
        rejectUnauthorized: false,
      });
      socket.once('secureConnect', () => {
        resolve(socket.getCipher().name);
        socket.destroy();
      });
      socket.once('error', () => resolve('refused'));
    });
  try {
    expect(await handshake('ECDHE-ECDSA-AES256-GCM-SHA384')).toBe('refused');
    install('renewed.pem', 'renewed-key.pem');
    await service.watch.check();
    expect(await handshake('ECDHE-ECDSA-AES256-GCM-SHA384')).toBe('refused');
    expect(await handshake('ECDHE-ECDSA-AES128-GCM-SHA256')).toBe('ECDHE-ECDSA-AES128-GCM-SHA256');
  } finally {
    await service.close();
  }
});

it('warns once as the certificate comes within 14 days of expiry, and says once when it has expired', async () => {
  const tls = await serveTls(files());
  const validTo = new Date('2126-11-10T22:38:59.000Z').getTime();
  let now = validTo - EXPIRY_WARNING_MS - 1;
  const options = { intervalMs: DAY, now: () => new Date(now) };
  const watch = tls.watch(log, options);
  try {
    await watch.check();
    expect(lines).toEqual([]);
    now = validTo - 5 * DAY - 1;
    await watch.check();
    await watch.check();
    expect(said('warn')).toEqual([
      {
        level: 'warn',
        message: 'TLS certificate expires soon',
        fields: { certificate: files().cert, validTo: '2126-11-10T22:38:59.000Z', daysLeft: 5 },
      },
    ]);
    now = validTo + 1000;
    await watch.check();
    await watch.check();
    expect(said('error')).toEqual([
      {
        level: 'error',
        message: 'TLS certificate expired: every new handshake fails until a renewed one is in place',
        fields: { certificate: files().cert, validTo: '2126-11-10T22:38:59.000Z' },
      },
    ]);
  } finally {
    watch.close();
  }
  // A service started within the 14 days says so at once.
  lines = [];
  now = validTo - DAY;
  tls.watch(log, options).close();
  expect(said('warn')).toMatchObject([{ message: 'TLS certificate expires soon', fields: { daysLeft: 1 } }]);
});

describe('sluice serve', () => {
  afterEach(() => vi.useRealTimers());

  it('reads --tls-cert and --tls-key again every 10 s', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const flags = parseServeArgs([
      ...['--rules', rulesFile, '--grpc-port', '0', '--http-port', '0', '--host', '127.0.0.1'],
      ...['--tls-cert', files().cert, '--tls-key', files().key],
    ]);
    const running = await serve(flags as ServeFlags, log);
    try {
      const address = `127.0.0.1:${running.grpcPort}`;
      install('renewed.pem', 'renewed-key.pem');
      vi.advanceTimersByTime(9_999);
      expect(await ask(address, trusting('ca.pem'))).toBe('OK');
      vi.advanceTimersByTime(1);
      await vi.waitFor(() => expect(lines.map((line) => line.message)).toContain('TLS certificate reloaded'));
      expect(await ask(address, trusting('renewed.pem'))).toBe('OK');
    } finally {
      await running.stop();
    }
  });
});
