import { type Duration, toMs } from '@sluice/core';
import {
  type Arrival,
  checkArrivalCount,
  checkEnd,
  generatorOptions,
  keyOption,
  orDefault,
  positiveInteger,
  startOption,
  trafficError,
} from './arrival.js';

export interface BoundaryAttackOptions {
  /** The limit under attack: requests per window. */
  limit: number;
  /** The window under attack. */
  window: Duration;
  /** How many window boundaries to attack. @default 3 */
  attacks?: number | undefined;
  /** How long before and after the boundary each half of the attack lasts, at most `window`. @default window / 20 */
  spread?: Duration | undefined;
  /** No request comes before it: the first attack is at the first boundary it leaves room for. @default 0 */
  startMs?: number | undefined;
  /** @default 'attacker' */
  key?: string | undefined;
}

/**
 * The classic attack on aligned fixed windows: `limit` requests just before a window
 * boundary and `limit` more just after it, so 2 × limit land within a fraction of one
 * window. Attacks hit every second boundary, with a quiet window between them. No
 * randomness: the attack is aimed.
 */
export function boundaryAttack(options: BoundaryAttackOptions): Arrival[] {
  generatorOptions(options, ['limit', 'window', 'attacks', 'spread', 'startMs', 'key']);
  const limit = positiveInteger(options.limit, 'limit');
  const windowMs = toMs(options.window, 'window');
  const attacks = positiveInteger(orDefault(options.attacks, 3), 'attacks');
  checkArrivalCount(2 * attacks * limit);
  const spreadMs =
    options.spread === undefined ? Math.max(1, Math.floor(windowMs / 20)) : toMs(options.spread, 'spread');
  // Attacks are two windows apart: a wider spread runs one attack's second half into the next
  // one's first half, out of time order, and is no longer an attack within one window.
  if (spreadMs > windowMs) {
    throw trafficError(
      `Traffic option \`spread\` must be at most the window (${windowMs} ms); received ${spreadMs} ms.`,
    );
  }
  const startMs = startOption(options.startMs);
  const key = keyOption(options.key, 'key', 'attacker');
  const firstBoundary = Math.ceil((startMs + spreadMs) / windowMs) * windowMs;
  // The last attack's second half ends a spread after its boundary.
  checkEnd(firstBoundary + 2 * (attacks - 1) * windowMs + spreadMs, '`startMs`, `window`, `spread` and `attacks`');
  const arrivals: Arrival[] = [];
  for (let n = 0; n < attacks; n++) {
    const boundary = firstBoundary + 2 * n * windowMs;
    // Evenly spread over [boundary − spread, boundary) and [boundary, boundary + spread).
    for (let i = 0; i < limit; i++)
      arrivals.push({ at: boundary - spreadMs + Math.floor((i * spreadMs) / limit), key, cost: 1 });
    for (let i = 0; i < limit; i++) arrivals.push({ at: boundary + Math.floor((i * spreadMs) / limit), key, cost: 1 });
  }
  return arrivals;
}
