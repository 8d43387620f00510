/**
 * The loop `memory-instructions.ts` counts: one in-process contender's decision on 100k client
 * keys in the bench's order, each awaited before the next (the `100k keys, seq` cell), `count`
 * times. Fails unless every decision was allowed.
 */
import { contenderFor } from '../inproc/contenders.js';
import { buildKeys } from '../lib/keys.js';

const [id = '', countArg = ''] = process.argv.slice(2);
const count = Number(countArg);
if (!Number.isSafeInteger(count) || count < 1) throw new Error('usage: memory-loop.ts <contender> <decisions>');
const keys = buildKeys(100_000);
const contender = await contenderFor(id)({ mode: 'pass', redisPort: undefined, maxKeys: keys.length });
let allowed = 0;
for (let i = 0, k = 0; i < count; i++, k = k + 1 === keys.length ? 0 : k + 1) {
  if (contender.allowed(await contender.call(keys[k] as string), false) === true) allowed++;
}
await contender.close();
if (allowed !== count) throw new Error(`${id}: ${count - allowed} decisions were not allowed`);
