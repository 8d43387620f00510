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

const unusableError = (flag: string, file: string, why: string, cause?: unknown): SluiceError =>
  new SluiceError('ERR_SLUICE_INVALID_SERVER_OPTION', `[sluice] ${flag} ${file}: ${why}.`, { cause });

const unusable = (flag: string, file: string, why: string, cause?: unknown): never => {
  throw unusableError(flag, file, why, cause);
};

async function pem(flag: string, file: string): Promise<Buffer> {
  try {
    return await readFile(file);
  } catch (cause) {
    return unusable(flag, file, `cannot be read (${(cause as NodeJS.ErrnoException).code ?? cause})`, cause);
  }
}

const BEGIN = '-----BEGIN CERTIFICATE-----';
const END = '-----END CERTIFICATE-----';

/**
 * The PEM certificate blocks of `text`, and whether every one that begins ends, read in one
 * pass: a pattern from each begin line to the next end line took seconds on a file of many
 * unended blocks, once at each read of a renewal.
 */
function pemBlocks(text: string): { blocks: string[]; whole: boolean } {
  const blocks: string[] = [];
  for (let at = text.indexOf(BEGIN); at !== -1; ) {
    const end = text.indexOf(END, at);
    const next = text.indexOf(BEGIN, at + BEGIN.length);
    if (end === -1 || (next !== -1 && next < end)) return { blocks, whole: false };
    blocks.push(text.slice(at, end + END.length));
    at = next;
  }
  return { blocks, whole: true };
}

/** gRPC's cipher list, as `ServerCredentials.createSsl` reads it. */
export const grpcCiphers = (): string | undefined => process.env.GRPC_SSL_CIPHER_SUITES;

/**
 * OpenSSL checks more only when files are served (its security level: a key too small, a
 * signature on a digest too weak, at the level gRPC's cipher list may set): gRPC then refused
 * every connection, with OpenSSL's bare words.
 */
function servable(file: string, options: SecureContextOptions, how: string): void {
  const ciphers = grpcCiphers();
  try {
    createSecureContext({ ...options, ...(ciphers === undefined ? {} : { ciphers }) });
  } catch (cause) {
    const flag = options.ca === undefined ? '--tls-cert' : '--tls-client-ca';
    unusable(flag, file, `cannot be served ${how}: OpenSSL refuses it (${(cause as Error).message})`, cause);
  }
}

/** A cipher list OpenSSL cannot use fails every certificate: said of the list, not of them. */
function checkCiphers(): void {
  const ciphers = grpcCiphers();
  if (ciphers === undefined) return;
  try {
    createSecureContext({ ciphers });
  } catch (cause) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_SERVER_OPTION',
      `[sluice] GRPC_SSL_CIPHER_SUITES ${JSON.stringify(ciphers)}: OpenSSL refuses it (${(cause as Error).message}).`,
      { cause },
    );
  }
}

/** Refusals of a certificate by date, which time may lift (one not valid yet) or bring. */
const byDate = new WeakSet<Error>();

/** Whether `error` refused the files by the certificate's dates alone: the same files may pass later. */
export const refusedByDate = (error: unknown): boolean => error instanceof Error && byDate.has(error);

function refuseByDate(file: string, why: string): never {
  const error = unusableError('--tls-cert', file, why);
  byDate.add(error);
  throw error;
}

/** A PKCS #8 encrypted key, or a traditional one (`Proc-Type: 4,ENCRYPTED`). */
const ENCRYPTED_KEY = /-----BEGIN ENCRYPTED PRIVATE KEY-----|^Proc-Type: *4, *ENCRYPTED/m;

/**
 * The first certificate of a PEM file (a chain's leaf), every one in it read: gRPC reads the
 * whole file, and a damaged block after the first failed start-up with OpenSSL's bare "bad
 * base64 decode", naming neither flag nor file, or in a client CA file was skipped unsaid.
 */
function certificate(flag: string, file: string, text: Buffer): X509Certificate {
  const { blocks, whole } = pemBlocks(text.toString('latin1'));
  if (!whole)
    return unusable(flag, file, `holds a certificate with no end line, number ${blocks.length + 1} in the file`);
  // X509Certificate reads DER too, which gRPC cannot: without PEM blocks, a DER file passed
  // here and failed start-up with OpenSSL's bare "no start line".
  if (blocks.length === 0) return unusable(flag, file, 'holds no PEM certificate');
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
  checkCiphers();
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
  const validTo = new Date(cert.validTo);
  if (texts.clientCa !== undefined) certificate('--tls-client-ca', files.clientCa as string, texts.clientCa);
  servable(files.cert, { cert: texts.cert, key: texts.key }, `with the key in ${files.key}`);
  if (texts.clientCa !== undefined) servable(files.clientCa as string, { ca: texts.clientCa }, 'as a client CA');
  // Last: files refused by date alone are the right ones at another time.
  if (now < new Date(cert.validFrom)) refuseByDate(files.cert, `is not valid before ${cert.validFrom}`);
  if (now > validTo) refuseByDate(files.cert, `expired ${cert.validTo}`);
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
