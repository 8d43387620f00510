import { createPrivateKey, type KeyObject, X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createSecureContext, type SecureContextOptions } from 'node:tls';
import { SluiceError } from '@sluice/core';

/** PEM files for gRPC over TLS (`--tls-cert`, `--tls-key`, `--tls-client-ca`). */
export interface TlsFiles {
  cert: string;
  key: string;
  /** When given, every client must present a certificate this CA signed (mutual TLS). */
  clientCa?: string | undefined;
}

/** The files' bytes, as gRPC serves them. */
export interface TlsTexts {
  cert: Buffer;
  key: Buffer;
  clientCa: Buffer | undefined;
}

/** The files read and checked: what gRPC may serve. */
export interface CheckedTls {
  texts: TlsTexts;
  validTo: Date;
  /** What the log says of it: the certificate's subject and when it expires. */
  described: { subject: string; validTo: string; clientCertificates: 'required' | 'not asked' };
}

const unusable = (flag: string, file: string, why: string, cause?: unknown): never => {
  throw new SluiceError('ERR_SLUICE_INVALID_SERVER_OPTION', `[sluice] ${flag} ${file}: ${why}.`, { cause });
};

async function pem(flag: string, file: string): Promise<Buffer> {
  try {
    return await readFile(file);
  } catch (cause) {
    return unusable(flag, file, `cannot be read (${(cause as NodeJS.ErrnoException).code ?? cause})`, cause);
  }
}

const BEGIN = '-----BEGIN CERTIFICATE-----';
const BLOCK = new RegExp(`${BEGIN}[\\s\\S]*?-----END CERTIFICATE-----`, 'g');

function servable(file: string, options: SecureContextOptions, how: string): void {
  try {
    createSecureContext(options);
  } catch (cause) {
    const flag = options.ca === undefined ? '--tls-cert' : '--tls-client-ca';
    unusable(flag, file, `cannot be served ${how}: OpenSSL refuses it (${(cause as Error).message})`, cause);
  }
}

/** A PKCS #8 encrypted key, or a traditional one (`Proc-Type: 4,ENCRYPTED`). */
const ENCRYPTED_KEY = /-----BEGIN ENCRYPTED PRIVATE KEY-----|^Proc-Type: *4, *ENCRYPTED/m;

/**
 * The first certificate of a PEM file (a chain's leaf), every one in it read: gRPC reads the
 * whole file, and a damaged block after the first failed start-up with OpenSSL's bare "bad
 * base64 decode", naming neither flag nor file, or in a client CA file was skipped unsaid.
 */
function certificate(flag: string, file: string, text: Buffer): X509Certificate {
  const pemText = text.toString('latin1');
  const blocks = pemText.match(BLOCK) ?? [];
  // X509Certificate reads DER too, which gRPC cannot: without PEM blocks, a DER file passed
  // here and failed start-up with OpenSSL's bare "no start line".
  if (blocks.length === 0) return unusable(flag, file, 'holds no PEM certificate');
  if (pemText.split(BEGIN).length - 1 !== blocks.length)
    return unusable(flag, file, `holds a certificate with no end line, after ${blocks.length} whole`);
  const read = blocks.map((block, i) => {
    try {
      return new X509Certificate(block);
    } catch (cause) {
      const which =
        blocks.length === 1 ? 'no PEM certificate' : `a damaged certificate, number ${i + 1} of ${blocks.length}`;
      return unusable(flag, file, `holds ${which}`, cause);
    }
  });
  return read[0] as X509Certificate;
}

/**
 * The files read and checked: gRPC would take a key that does not match its certificate, or a
 * certificate out of date, and then fail every client's handshake with nothing in the
 * service's log.
 */
export async function readTls(files: TlsFiles, now: Date = new Date()): Promise<CheckedTls> {
  return checkTls(files, await readTlsTexts(files), now);
}

/** The files' bytes, unchecked; a file that cannot be read fails naming its flag. */
export async function readTlsTexts(files: TlsFiles): Promise<TlsTexts> {
  const [cert, key, clientCa] = await Promise.all([
    pem('--tls-cert', files.cert),
    pem('--tls-key', files.key),
    files.clientCa === undefined ? undefined : pem('--tls-client-ca', files.clientCa),
  ]);
  return { cert, key, clientCa };
}

/** `texts`, read from `files`, checked as `readTls` does. */
export function checkTls(files: TlsFiles, texts: TlsTexts, now: Date): CheckedTls {
  const cert = certificate('--tls-cert', files.cert, texts.cert);
  let key: KeyObject;
  try {
    key = createPrivateKey(texts.key);
  } catch (cause) {
    // OpenSSL, asked for a passphrase it was not given, says only "interrupted or cancelled".
    const why = ENCRYPTED_KEY.test(texts.key.toString('latin1'))
      ? 'holds an encrypted private key, and gRPC takes no passphrase: give it the key decrypted (`openssl pkey -in <file> -out <new file>`)'
      : 'holds no PEM private key';
    return unusable('--tls-key', files.key, why, cause);
  }
  if (!cert.checkPrivateKey(key))
    unusable('--tls-key', files.key, `is not the key of the certificate in ${files.cert}`);
  if (now < new Date(cert.validFrom)) unusable('--tls-cert', files.cert, `is not valid before ${cert.validFrom}`);
  const validTo = new Date(cert.validTo);
  if (now > validTo) unusable('--tls-cert', files.cert, `expired ${cert.validTo}`);
  if (texts.clientCa !== undefined) certificate('--tls-client-ca', files.clientCa as string, texts.clientCa);
  // OpenSSL checks more only when the files are served (its security level: a key too small, a
  // signature on a digest too weak): gRPC then refused every connection, with OpenSSL's bare words.
  servable(files.cert, { cert: texts.cert, key: texts.key }, `with the key in ${files.key}`);
  if (texts.clientCa !== undefined) servable(files.clientCa as string, { ca: texts.clientCa }, 'as a client CA');
  return {
    texts,
    validTo,
    described: {
      subject: cert.subject,
      validTo: validTo.toISOString(),
      clientCertificates: texts.clientCa === undefined ? 'not asked' : 'required',
    },
  };
}
