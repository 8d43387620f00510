import { checkOptionNames, DEFAULT_MAX_KEYS, type Policy, SluiceError } from '@sluice/core';

export interface LocalFirstOptions {
  /** How often this process writes its counts to Redis and reads the fleet's back, in ms (5 to 60000). */
  syncIntervalMs: number;
  /**
   * While Redis is out of reach, the share of each limit this process may admit on its own,
   * from 0 (exclusive) to 1. With N processes, `1 / N` keeps the fleet within the limit. @default 1
   */
  outageShare?: number | undefined;
  /**
   * The most clients this process keeps (1 to 2^30). When full, it forgets the least recently
   * used one whose counts Redis holds, which is read again at its next request. @default 100000
   */
  maxKeys?: number | undefined;
}

export interface CheckedLocalFirst {
  syncIntervalMs: number;
  outageShare: number;
  maxKeys: number;
}

const OPTION_NAMES = ['syncIntervalMs', 'outageShare', 'maxKeys'];

export function checkLocalFirst(options: unknown): CheckedLocalFirst {
  if (typeof options !== 'object' || options === null) {
    throw invalid(
      `Option \`localFirst\` must be an object such as \`{ syncIntervalMs: 50 }\`; received ${String(options)}.`,
    );
  }
  checkOptionNames(options, OPTION_NAMES, 'local-first');
  const { syncIntervalMs, outageShare = 1, maxKeys = DEFAULT_MAX_KEYS } = options as Partial<LocalFirstOptions>;
  if (
    typeof syncIntervalMs !== 'number' ||
    !Number.isInteger(syncIntervalMs) ||
    syncIntervalMs < 5 ||
    syncIntervalMs > 60_000
  ) {
    throw invalid(
      `Option \`localFirst.syncIntervalMs\` must be a whole number of ms from 5 to 60000; received ${String(syncIntervalMs)}.`,
    );
  }
  if (typeof outageShare !== 'number' || !(outageShare > 0 && outageShare <= 1)) {
    throw invalid(
      `Option \`localFirst.outageShare\` must be a number above 0 and at most 1; received ${String(outageShare)}.`,
    );
  }
  if (typeof maxKeys !== 'number' || !Number.isInteger(maxKeys) || maxKeys < 1 || maxKeys > 2 ** 30) {
    throw invalid(
      `Option \`localFirst.maxKeys\` must be a whole number of clients from 1 to 2^30; received ${String(maxKeys)}.`,
    );
  }
  return { syncIntervalMs, outageShare, maxKeys };
}

/**
 * Local-first counts units per window and adds the fleet's counts together, which keeps the
 * meaning of the window algorithms. A bucket's or log's state is not a sum of counts: merged
 * from deltas it would admit bursts no single store allows, so those are refused.
 */
export function checkLocalFirstPolicies(policies: readonly Policy[]): void {
  for (const policy of policies) {
    if (policy.algorithm !== 'fixed-window' && policy.algorithm !== 'sliding-window-counter') {
      throw new SluiceError(
        'ERR_SLUICE_INVALID_POLICIES',
        `[sluice] Policy \`${policy.name}\` uses \`${policy.algorithm}\`, which a local-first Redis store cannot decide well; local-first mode supports \`fixed-window\` and \`sliding-window-counter\`. Use the exact store (no \`localFirst\`) for this limiter.`,
      );
    }
  }
}

const invalid = (message: string) => new SluiceError('ERR_SLUICE_INVALID_OPTION', `[sluice] ${message}`);
