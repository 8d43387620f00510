import { parseArgs } from '../lib/args.js';
import { reportAndExit } from '../lib/child-main.js';
import { settledMemory } from '../lib/settled-memory.js';
import { CASES } from './cases.js';

/**
 * What creating limiters costs, in a fresh process per case (run with --expose-gc): `count`
 * limiters are created as an app creates per-route ones at start-up, then the time taken and
 * the memory they keep (V8 heap, and lru-cache's typed arrays outside it) are read.
 */

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const create = CASES[args.get('case') ?? ''];
  const count = Number(args.get('count') ?? 200);
  if (create === undefined) throw new Error(`unknown case ${args.get('case')}`);
  create(-1); // loads every module the case needs before the clock starts
  const before = await settledMemory();
  const kept: unknown[] = [];
  const start = performance.now();
  for (let i = 0; i < count; i++) kept.push(create(i));
  const ms = performance.now() - start;
  const after = await settledMemory();
  return {
    ms,
    heapBytes: after.heapUsed - before.heapUsed,
    externalBytes: after.external - before.external,
    kept: kept.length,
  };
}

reportAndExit(main());
