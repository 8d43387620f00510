import { Unavailable } from '../inproc/contender.js';
import { contenderFor } from '../inproc/contenders.js';
import { parseArgs } from '../lib/args.js';
import { reportAndExit } from '../lib/child-main.js';
import { buildKeys } from '../lib/keys.js';
import { settledMemory } from '../lib/settled-memory.js';

/**
 * Memory per tracked key, in a fresh process per contender (run with --expose-gc): the key
 * strings are built, the contender's packages loaded and a baseline taken first, so what is
 * counted is what the store adds for a key, including any table it sizes up front for
 * `maxKeys`, and not the key string it keeps, which every store keeps alike. Each key is then
 * used once; the window (1 min) outlasts the fill, so nothing expires.
 */
const args = parseArgs(process.argv.slice(2));
const id = args.get('contender') as string;
const keyCount = Number(args.get('keys') ?? 1_000_000);

async function main() {
  const keys = buildKeys(keyCount);
  const create = contenderFor(id);
  const setup = (maxKeys: number) => ({ mode: 'pass' as const, redisPort: undefined, maxKeys });
  try {
    // A store of one key first, closed at once: it loads the contender's packages (see
    // `contenderFor`), whose code is no part of what a store keeps per key.
    await (await create(setup(1))).close();
  } catch (error) {
    if (error instanceof Unavailable) return { unavailable: error.message };
    throw error;
  }
  const before = await settledMemory();
  const contender = await create(setup(keyCount));
  const start = performance.now();
  for (const key of keys) await contender.call(key);
  const fillSeconds = (performance.now() - start) / 1000;
  const after = await settledMemory();
  const result = {
    heapBytesPerKey: (after.heapUsed - before.heapUsed) / keyCount,
    // Typed arrays live outside the V8 heap (lru-cache keeps its links there): counted apart.
    externalBytesPerKey: (after.external - before.external) / keyCount,
    rssBytesPerKey: (after.rss - before.rss) / keyCount,
    fillSeconds,
  };
  // Keeps the store reachable until after the measurement.
  await contender.close();
  return result;
}

reportAndExit(main());
