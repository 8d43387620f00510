import { createHash } from 'node:crypto';
import type { RedisBenchCase } from './redis-benchmark.js';
import { RANDOM } from './scripts.js';

/**
 * The least any script deciding from one string can cost: it GETs the string and SETs it
 * back with a TTL, and does nothing else. Replayed with the same key shape as sluice's calls,
 * its Redis time per call is what EVALSHA itself costs on this machine, so a script's figure
 * can be read against it.
 */
const floorLua = `local text = redis.call('GET', KEYS[1])
redis.call('SET', KEYS[1], ARGV[1], 'PX', 60000)
return text`;

export function floorCases(): RedisBenchCase[] {
  const sha = createHash('sha1').update(floorLua).digest('hex');
  const script = { label: 'floor: EVALSHA that GETs and SETs one string', lua: floorLua, sha, args: [], decisions: 1 };
  const state = ' _0@gcra-60000-100=1700000000000,0;1,1700000000600';
  return [{ label: script.label, command: ['EVALSHA', sha, '1', `rb:floor:{sluice|${RANDOM}}`, state], script }];
}
