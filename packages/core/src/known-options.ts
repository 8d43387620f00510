import { SluiceError } from './errors.js';

/** The options of one policy, given at the top level of a single-policy limiter or inside `policies`. */
export const POLICY_OPTION_NAMES = [
  'limit',
  'window',
  'algorithm',
  'burst',
  'queue',
  'refillAmount',
  'refillInterval',
  'name',
] as const;

/** Every option `createLimiter` understands; adapters extend this list with their own. */
export const LIMITER_OPTION_NAMES: readonly string[] = [
  ...POLICY_OPTION_NAMES,
  'policies',
  'store',
  'clock',
  'prefix',
  'throttle',
  'onStoreError',
  'storeTimeoutMs',
  'logger',
];

/**
 * A misspelt option (`windowMs`, `max`) would otherwise be ignored and the limiter would
 * silently run on defaults, so unknown names fail at start-up with a suggestion.
 */
export function checkKnownOptions(options: object, known: readonly string[] = LIMITER_OPTION_NAMES): void {
  for (const name of Object.keys(options)) {
    if (known.includes(name)) continue;
    const hint = closestName(name, known);
    throw new SluiceError(
      'ERR_SLUICE_UNKNOWN_OPTION',
      `[sluice] Unknown option \`${name}\`${hint ? `; did you mean \`${hint}\`?` : '.'}`,
    );
  }
}

/** The known name a misspelt one most likely meant (at most two edits away), for "did you mean" hints. */
export function closestName(name: string, known: readonly string[]): string | undefined {
  const aliases: Record<string, string> = { windowMs: 'window', max: 'limit', points: 'limit', duration: 'window' };
  if (aliases[name] !== undefined) return aliases[name];
  let best: string | undefined;
  let bestDistance = 3;
  for (const candidate of known) {
    const d = distance(name.toLowerCase(), candidate.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  return best;
}

function distance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      next[j] = Math.min(
        (row[j] as number) + 1,
        (next[j - 1] as number) + 1,
        (row[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    }
    row = next;
  }
  return row[b.length] as number;
}
