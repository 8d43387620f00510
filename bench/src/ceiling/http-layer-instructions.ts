/**
 * Instructions per decision of the HTTP layer (`createHttpLimiter().handle`: client address,
 * key, limiter, store, headers, refusal), a count the machine's load does not move, for
 * judging a change to the per-request path on a busy machine. Each case of
 * `http-layer-loop.ts` runs under callgrind twice, for 200,000 and 1,000,000 decisions; the
 * difference over 800,000 leaves out start-up and warm-up. `--single-threaded` keeps V8's
 * background compiler and collector threads, which land at different moments in each run,
 * out of the count; what is left moves by about 100 between runs. Runs the compiled
 * packages, as users do: `pnpm build` first. The deny-cache case needs Redis (REDIS_URL, by
 * default 127.0.0.1:6379). About a minute a case; name cases to count only those.
 *   pnpm build && pnpm --dir bench exec tsx src/ceiling/http-layer-instructions.ts [case…]
 */
import { finish, nodeFlags, sourceFile, spawnPinned } from '../lib/children.js';
import { httpLayerCases } from './http-layer-cases.js';

const SHORT = 200_000;
const LONG = 1_000_000;

/** The instructions callgrind counted in one run of the loop. */
async function instructions(name: string, count: number): Promise<number> {
  const child = spawnPinned(0, 'valgrind', [
    ...['--tool=callgrind', '--callgrind-out-file=/dev/null', process.execPath, '--single-threaded'],
    ...[...nodeFlags, sourceFile('ceiling/http-layer-loop.ts'), name, String(count)],
  ]);
  const done = await finish(child, 600_000);
  const collected = /Collected : (\d+)/.exec(done.stderr);
  if (done.code !== 0 || collected === null) throw new Error(`${name}: ${done.stderr.slice(-2000)}`);
  return Number(collected[1]);
}

const asked = process.argv.slice(2);
const unknown = asked.filter((name) => !(httpLayerCases as readonly string[]).includes(name));
if (unknown.length > 0) throw new Error(`unknown case ${unknown.join(', ')}; the cases: ${httpLayerCases.join(', ')}`);
console.log('| case | instructions per decision |\n| --- | ---: |');
for (const name of asked.length > 0 ? asked : httpLayerCases) {
  const perDecision = ((await instructions(name, LONG)) - (await instructions(name, SHORT))) / (LONG - SHORT);
  console.log(`| ${name} | ${Math.round(perDecision).toLocaleString('en-US')} |`);
}
