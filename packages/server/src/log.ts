import { format } from 'node:util';
import { setLogger } from '@grpc/grpc-js';
import type { Logger } from '@sluice/core';

export type Level = 'info' | 'warn' | 'error';
export type LogFields = Record<string, unknown>;

/** The service's log: one JSON object per line, which log shippers parse without rules. */
export interface ServiceLog extends Logger {
  line(level: Level, message: string, fields?: LogFields): void;
}

/** Writes to `write` (stderr by default); `warn(message)` also serves as core's one-time warning logger. */
export function createServiceLog(write: (text: string) => void = (text) => process.stderr.write(text)): ServiceLog {
  const line = (level: Level, message: string, fields: LogFields = {}): void => {
    write(`${JSON.stringify({ time: new Date().toISOString(), level, msg: message, ...fields })}\n`);
  };
  return { line, warn: (message) => line('warn', message) };
}

/**
 * Sends grpc-js's own lines (its errors, traces asked for with `GRPC_TRACE`) to
 * `log`, where they were plain text on stderr among the JSON lines. For the process's service:
 * grpc-js keeps one logger per process.
 */
export function logGrpcTo(log: ServiceLog): void {
  const to =
    (level: Level) =>
    (...args: unknown[]): void =>
      log.line(level, format(...args), { source: 'grpc-js' });
  setLogger({ error: to('error'), info: to('info'), debug: to('info') });
}
