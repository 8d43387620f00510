import { quietLogger } from '../quiet-logger.js';
import type { Logger } from '../types.js';

/** Setup problems that show only per request; each is logged once per middleware (docs/errors.md). */
export type SluiceWarningCode =
  | 'WRN_SLUICE_PERMISSIVE_TRUST_PROXY'
  | 'WRN_SLUICE_IGNORED_TRUST_PROXY'
  | 'WRN_SLUICE_UNEXPECTED_X_FORWARDED_FOR'
  | 'WRN_SLUICE_UNREAD_PROXY_HEADER'
  | 'WRN_SLUICE_UNTRUSTED_PROXY'
  | 'WRN_SLUICE_UNDEFINED_IP'
  | 'WRN_SLUICE_INVALID_IP'
  | 'WRN_SLUICE_CREATED_IN_REQUEST'
  | 'WRN_SLUICE_CALLBACK_FAILED'
  | 'WRN_SLUICE_NOT_BOOLEAN'
  | 'WRN_SLUICE_UNKNOWN_DOMAIN'
  | 'WRN_SLUICE_MIXED_HEADER_DRAFTS'
  | 'WRN_SLUICE_DUPLICATE_POLICY_NAME'
  | 'WRN_SLUICE_DECISION_NOT_STORED'
  | 'WRN_SLUICE_RULE_PATH_SPELLING'
  | 'WRN_SLUICE_RULE_ADDRESS_SPELLING';

/** Logs `message` once per code or, given `about`, once per code and `about` (one per rule value, say). */
export type WarnOnce = (code: SluiceWarningCode, message: string, about?: string) => void;

/** Never throws into a request: a logger that fails is ignored (`quietLogger`). For adapters and the decision service. */
export function createWarnOnce(logger: Logger): WarnOnce {
  const sent = new Set<string>();
  const quiet = quietLogger(logger);
  return (code, message, about) => {
    const what = about === undefined ? code : `${code} ${about}`;
    if (sent.has(what)) return;
    sent.add(what);
    quiet.warn(`[sluice] ${code}: ${message}`);
  };
}
