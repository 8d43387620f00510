/**
 * The loop `memory-instructions.ts` counts: one in-process contender's decision on 100k client
 * keys in the bench's order, each awaited before the next (the `100k keys, seq` cell), `count`
 * times. Fails unless every decision was allowed.
 */
import { memoryDecisions } from './memory-decisions.js';

const [id = '', countArg = ''] = process.argv.slice(2);
const count = Number(countArg);
if (!Number.isSafeInteger(count) || count < 1) throw new Error('usage: memory-loop.ts <contender> <decisions>');
const decisions = await memoryDecisions(id);
await decisions.decide(count);
await decisions.close();
