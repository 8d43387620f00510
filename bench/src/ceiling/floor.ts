import { createHash } from 'node:crypto';
import type { RedisBenchCase } from './redis-benchmark.js';
import { RANDOM } from './scripts.js';

/**
 * The least any script deciding from one string can cost: it GETs the string and SETs it
 * back with a TTL, and does nothing else. Replayed with the same key shape as sluice's calls,
 * its Redis time per call is what EVALSHA itself costs on this machine, so a script's figure
 * can be read against it.
 */
const getSetLua = `local text = redis.call('GET', KEYS[1])
redis.call('SET', KEYS[1], ARGV[1], 'PX', 60000)
return text`;

/**
 * The same, plus part of what every decision on Redis's clock with text arguments does
 * besides the rate-limit arithmetic: TIME, three numbers from ARGV and two from the string,
 * the state formatted back with `%d`, and a packed reply of five numbers. The arguments are
 * those of a one-policy gcra call (whose policy figures it does not even read).
 */
const readsLua = `local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local decisions, cost, capacity = tonumber(ARGV[1]), tonumber(ARGV[4]), tonumber(ARGV[6])
local text = redis.call('GET', KEYS[1])
local a, b = 0, 0
if text then
  local equals = string.find(text, '=', 1, true)
  local comma = string.find(text, ',', equals, true)
  a, b = tonumber(string.sub(text, equals + 1, comma - 1)), tonumber(string.sub(text, comma + 1, comma + 1))
end
redis.call('SET', KEYS[1], string.format(' _0@gc=%d,%d;%d,%d', now + a % 1000, b, cost, now + capacity), 'PX', string.format('%d', 60000))
return struct.pack('<ddddd', now, decisions, capacity, cost, 0)`;

const script = (label: string, lua: string) => ({
  label,
  lua,
  sha: createHash('sha1').update(lua).digest('hex'),
  args: [],
  decisions: 1,
});

export function floorCases(): RedisBenchCase[] {
  const getSet = script('floor: EVALSHA that GETs and SETs one string', getSetLua);
  const reads = script('floor: TIME, GET, SET, a few numbers read and written', readsLua);
  const state = ' _0@gcra-60000-100=1700000000000,0;1,1700000000600';
  const gcraArgs = ['1', '', 'consume', '1', ' _0@gc.100.60000.100.0.0=gcra 100 60000 0 0 0;', '100'];
  return [
    {
      label: getSet.label,
      command: ['EVALSHA', getSet.sha, '1', `rb:floor:{sluice|${RANDOM}}`, state],
      script: getSet,
    },
    {
      label: reads.label,
      command: ['EVALSHA', reads.sha, '1', `rb:reads:{sluice|${RANDOM}}`, ...gcraArgs],
      script: reads,
    },
  ];
}
