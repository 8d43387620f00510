import { FIXED_HEADERS, REDIS_ROUND_TRIP } from '../http/apps/app.js';

/** A markdown table; the first column left-aligned, the rest right-aligned. */
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const align = headers.map((_, i) => (i === 0 ? '---' : '---:'));
  const line = (cells: readonly string[]) => `| ${cells.join(' | ')} |`;
  return [line(headers), line(align), ...rows.map(line)].join('\n');
}

/** Marks for the targets table. */
export const verdict = (met: boolean | undefined): string =>
  met === undefined ? 'not measured' : met ? '**met**' : '**missed**';

/** `sluice:memory` → `sluice (memory)`. */
export const limiterName = (variant: string): string => {
  if (variant === 'bare') return 'bare';
  if (variant === FIXED_HEADERS) return 'RateLimit fields alone (control)';
  if (variant === REDIS_ROUND_TRIP) return 'one Redis INCR alone (control)';
  const [name, store] = variant.split(':');
  return `${name} (${store})`;
};
