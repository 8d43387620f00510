import type { Logger } from '../types.js';

/** Setup problems that show only per request; each is logged once per middleware (docs/errors.md). */
export type SluiceWarningCode =
  | 'WRN_SLUICE_PERMISSIVE_TRUST_PROXY'
  | 'WRN_SLUICE_IGNORED_TRUST_PROXY'
  | 'WRN_SLUICE_UNEXPECTED_X_FORWARDED_FOR'
  | 'WRN_SLUICE_UNDEFINED_IP'
  | 'WRN_SLUICE_INVALID_IP'
  | 'WRN_SLUICE_CREATED_IN_REQUEST'
  | 'WRN_SLUICE_CALLBACK_FAILED'
  | 'WRN_SLUICE_NOT_BOOLEAN'
  | 'WRN_SLUICE_UNKNOWN_DOMAIN';

export type WarnOnce = (code: SluiceWarningCode, message: string) => void;

/** Never throws into a request: a logger that fails is ignored. */
export function createWarnOnce(logger: Logger): WarnOnce {
  const sent = new Set<SluiceWarningCode>();
  return (code, message) => {
    if (sent.has(code)) return;
    sent.add(code);
    try {
      logger.warn(`[sluice] ${code}: ${message}`);
    } catch {}
  };
}
