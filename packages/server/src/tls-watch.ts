import type { SecureContextOptions } from 'node:tls';
import { ServerCredentials } from '@grpc/grpc-js';
import { messageOf } from '@sluice/core';
import type { ServiceLog } from './log.js';
import {
  type CheckedTls,
  checkTls,
  grpcCiphers,
  readTls,
  readTlsTexts,
  refusedByDate,
  type TlsFiles,
  type TlsTexts,
} from './tls.js';

/** gRPC over TLS from files, checked, and kept current as they are renewed. */
export interface ServedTls {
  credentials: ReplaceableTlsCredentials;
  /** What the log says of the certificate first served. */
  described: CheckedTls['described'];
  /** Starts reading the files again every `intervalMs`: see `watchTls`. */
  watch(log: ServiceLog, options: TlsWatchOptions): TlsWatch;
}

/** The files read and checked (a failure stops start-up), ready to serve and to watch. */
export async function serveTls(files: TlsFiles): Promise<ServedTls> {
  const checked = await readTls(files);
  const credentials = new ReplaceableTlsCredentials(checked);
  return {
    credentials,
    described: checked.described,
    watch: (log, options) => watchTls(files, checked, credentials, log, options),
  };
}

/**
 * gRPC server credentials whose certificate, key and client CA can be replaced while the
 * server runs: grpc-js hands each replacement to its TLS server (`setSecureContext`), so
 * every later handshake uses it and connections already open keep theirs.
 */
export class ReplaceableTlsCredentials extends ServerCredentials {
  /** gRPC's cipher list, which `GRPC_SSL_CIPHER_SUITES` may set, as `ServerCredentials.createSsl` reads it. */
  private readonly ciphers: string | undefined;

  constructor(served: CheckedTls) {
    const ciphers = grpcCiphers();
    // As `ServerCredentials.createSsl`: a client certificate asked for, and required, when a
    // client CA is given.
    super({ requestCert: served.texts.clientCa !== undefined, ciphers }, context(served, ciphers));
    this.ciphers = ciphers;
  }

  replace(served: CheckedTls): void {
    // Given again each time: Node's `setSecureContext` takes the cipher list from these options
    // alone, and without it served its default list.
    this.updateSecureContextOptions(context(served, this.ciphers));
  }

  _equals(other: ServerCredentials): boolean {
    return other === this;
  }
}

const context = ({ texts }: CheckedTls, ciphers: string | undefined): SecureContextOptions => ({
  cert: [texts.cert],
  key: [texts.key],
  ...(texts.clientCa === undefined ? {} : { ca: texts.clientCa }),
  ...(ciphers === undefined ? {} : { ciphers }),
});

/** Warned of in the log from this long before the certificate expires. */
export const EXPIRY_WARNING_MS = 14 * 24 * 60 * 60 * 1000;

export interface TlsWatch {
  /** Reads the files now, as the interval does; resolves once they are served or refused. */
  check(): Promise<void>;
  close(): void;
}

export interface TlsWatchOptions {
  /** How often the files are read again. */
  intervalMs: number;
  now?: () => Date;
}

/** The most failures of one run of failed reads kept, to be told apart and each logged once. */
const MAX_FAILURES_KEPT = 10;

/** A way the files failed: what they held (nothing when they could not be read), why, and whether the log said so. */
interface Failure {
  texts: TlsTexts | undefined;
  message: string;
  /** Refused by the certificate's dates alone: the same files may pass later, and are checked again. */
  byDate: boolean;
  logged: boolean;
}

/**
 * Reads the TLS files every `intervalMs` and, when their bytes changed and pass the start-up
 * checks, serves them from the next handshake: a certificate renewed in place (cert-manager,
 * a mounted Secret, certbot) is served without a restart. Files that fail the checks leave the
 * last good ones served. The log says why once two reads in a row have failed, each way they
 * failed once, so that files caught while being written (a certificate before its key) say
 * nothing. Files already refused are not checked again, unless by their dates (a certificate
 * not valid yet is served once it is). It warns when the served certificate comes within 14
 * days of expiry, and says when it has expired, once each.
 */
export function watchTls(
  files: TlsFiles,
  served: CheckedTls,
  credentials: ReplaceableTlsCredentials,
  log: ServiceLog,
  { intervalMs, now = () => new Date() }: TlsWatchOptions,
): TlsWatch {
  /** The failed reads in a row, and the ways they failed. */
  let failedReads = 0;
  let failures: Failure[] = [];
  let told: 'soon' | 'expired' | undefined;
  let checking: Promise<void> | undefined;

  const failed = (failure: Failure): void => {
    failedReads++;
    if (failedReads < 2 || failure.logged) return;
    failure.logged = true;
    log.line('error', 'TLS files not reloaded; serving the last good certificate', {
      error: failure.message,
      validTo: served.described.validTo,
    });
  };
  /** A read that served what it found, or found what is served: no failure runs on. */
  const settled = (): void => {
    failedReads = 0;
    failures = [];
  };

  const replaceIfChanged = async (): Promise<void> => {
    let texts: TlsTexts | undefined;
    try {
      texts = await readTlsTexts(files);
      if (sameTexts(texts, served.texts)) return settled();
      // Files refused for what they hold fail alike at each read: not checked again.
      const known = failures.find((failure) => !failure.byDate && sameRead(failure.texts, texts));
      if (known !== undefined) return failed(known);
      const checked = checkTls(files, texts, now());
      credentials.replace(checked);
      served = checked;
      settled();
      told = undefined;
      log.line('info', 'TLS certificate reloaded', checked.described);
    } catch (error) {
      const message = messageOf(error);
      let failure = failures.find((known) => known.message === message && sameRead(known.texts, texts));
      if (failure === undefined) {
        failure = { texts, message, byDate: refusedByDate(error), logged: false };
        if (failures.length < MAX_FAILURES_KEPT) failures.push(failure);
      }
      failed(failure);
    }
  };
  const tellExpiry = (): void => {
    const left = served.validTo.getTime() - now().getTime();
    if (left <= 0 && told !== 'expired') {
      told = 'expired';
      log.line('error', 'TLS certificate expired: every new handshake fails until a renewed one is in place', {
        certificate: files.cert,
        validTo: served.described.validTo,
      });
    } else if (left > 0 && left <= EXPIRY_WARNING_MS && told === undefined) {
      told = 'soon';
      log.line('warn', 'TLS certificate expires soon', {
        certificate: files.cert,
        validTo: served.described.validTo,
        daysLeft: Math.floor(left / (24 * 60 * 60 * 1000)),
      });
    }
  };
  // One read at a time: a slow disk must not stack reads that would land out of order.
  const check = (): Promise<void> => {
    checking ??= replaceIfChanged()
      .then(tellExpiry)
      .finally(() => {
        checking = undefined;
      });
    return checking;
  };

  tellExpiry();
  const timer = setInterval(check, intervalMs);
  // The service's own handles keep it running; this timer must not once they are closed.
  timer.unref();
  return { check, close: () => clearInterval(timer) };
}

/** Two reads alike: the same bytes, or neither could be read. */
const sameRead = (a: TlsTexts | undefined, b: TlsTexts | undefined): boolean =>
  a === undefined || b === undefined ? a === b : sameTexts(a, b);

const sameTexts = (a: TlsTexts, b: TlsTexts): boolean =>
  a.cert.equals(b.cert) &&
  a.key.equals(b.key) &&
  (a.clientCa === undefined ? b.clientCa === undefined : b.clientCa !== undefined && a.clientCa.equals(b.clientCa));
