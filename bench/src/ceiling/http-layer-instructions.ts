/**
 * Instructions per decision of the HTTP layer (`createHttpLimiter().handle`: client address,
 * key, limiter, store, headers, refusal), a count the machine's load does not move, for
 * judging a change to the per-request path on a busy machine. Each case of
 * `http-layer-loop.ts` runs under callgrind for 200,000 and 1,000,000 decisions in three
 * layouts (see `callgrind.ts`). Runs the compiled packages, as users do: `pnpm build` first. The
 * deny-cache, local-first and redis-pass cases need Redis (REDIS_URL, by default 127.0.0.1:6379). About
 * four minutes a case; name cases to count only those.
 *   pnpm build && pnpm --dir bench exec tsx src/ceiling/http-layer-instructions.ts [case…]
 */
import { int } from '../lib/format.js';
import { instructionsPerCall } from './callgrind.js';
import { httpLayerCases } from './http-layer-cases.js';

const asked = process.argv.slice(2);
const unknown = asked.filter((name) => !(httpLayerCases as readonly string[]).includes(name));
if (unknown.length > 0) throw new Error(`unknown case ${unknown.join(', ')}; the cases: ${httpLayerCases.join(', ')}`);
console.log('| case | instructions per decision (range over layouts) |\n| --- | ---: |');
for (const name of asked.length > 0 ? asked : httpLayerCases) {
  const { median, low, high } = await instructionsPerCall('ceiling/http-layer-loop.ts', [name], 1_000_000, 200_000);
  console.log(`| ${name} | ${int(median)} (${int(low)}–${int(high)}) |`);
}
