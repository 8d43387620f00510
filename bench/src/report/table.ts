import {
  COUNTED_FIELDS,
  FIXED_HEADERS,
  MEMORY_BESIDE_IDLE_CLIENT,
  REDIS_COUNTED_FIELDS,
  REDIS_ROUND_TRIP,
} from '../http/apps/app.js';

/** A markdown table; the first column left-aligned, the rest right-aligned. */
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const align = headers.map((_, i) => (i === 0 ? '---' : '---:'));
  const line = (cells: readonly string[]) => `| ${cells.join(' | ')} |`;
  return [line(headers), line(align), ...rows.map(line)].join('\n');
}

/** Marks for the targets table: a miss whose control or floor misses too is out of reach on this machine. */
export const verdict = (met: boolean | undefined, boundMisses = false): string => {
  if (met === undefined) return 'not measured';
  if (met) return '**met**';
  return boundMisses ? '**out of reach**: the control misses too' : '**missed**';
};

/** `sluice:memory` → `sluice (memory)`. */
export const limiterName = (variant: string): string => {
  if (variant === 'bare') return 'bare';
  if (variant === FIXED_HEADERS) return 'RateLimit fields alone (control)';
  if (variant === COUNTED_FIELDS) return 'RateLimit fields counted in a Map (floor)';
  if (variant === REDIS_ROUND_TRIP) return 'one Redis INCR alone (control)';
  if (variant === REDIS_COUNTED_FIELDS) return 'RateLimit fields counted by one Redis INCR (floor)';
  if (variant === MEMORY_BESIDE_IDLE_CLIENT) return 'sluice (memory) beside an idle Redis client (floor)';
  const [name, store] = variant.split(':');
  return `${name} (${store})`;
};
