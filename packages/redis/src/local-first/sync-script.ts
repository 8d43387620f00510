import type { RedisClient } from '../client.js';

/**
 * One call per hash slot reconciles every key of the slot. Each key is one window of one
 * policy slot of one client: a hash with a field per process and policy version holding that
 * one's cumulative count in the window. Writing a total, never adding a delta, makes a sync
 * idempotent: a call whose reply was lost is sent again with the same (or a larger) total and
 * counts once.
 *
 * KEYS: window hashes, one slot. ARGV: per key its field ('<process id>:<policy set>:<incarnation>'),
 * its total and the key's expiry in ms. Reply: per key the sum over every field, this one's included.
 *
 * What sluice never writes there reads as no count, as a damaged decision key reads as no
 * state: a key of another type is replaced, a field that is no whole number from 0 to 2^53 adds
 * nothing. Failing the call instead would hold every client of the slot to its outage share,
 * and a negative count would admit past the limit.
 */
const SYNC_LUA = `
local out = {}
for i = 1, #KEYS do
  local key, field, total = KEYS[i], ARGV[3 * i - 2], ARGV[3 * i - 1]
  -- On a key of another type HEXISTS returns an error, and so does HSET: the key is replaced.
  if total ~= '0' or redis.pcall('HEXISTS', key, field) ~= 0 then
    local written = redis.pcall('HSET', key, field, total)
    if type(written) == 'table' then
      -- Any other refusal (out of memory) fails the call, as it would have failed the write.
      if not string.find(written.err, 'WRONGTYPE', 1, true) then return written end
      redis.call('DEL', key)
      redis.call('HSET', key, field, total)
    end
    redis.call('PEXPIRE', key, ARGV[3 * i])
  end
  local sum = 0
  for _, text in ipairs(redis.call('HVALS', key)) do
    local count = tonumber(text)
    if count and count >= 0 and count < 9007199254740992 and count % 1 == 0 then sum = sum + count end
  end
  out[i] = sum
end
return out
`;

const COMMAND = 'sluiceLocalFirstSync';

type SyncCommand = (keyCount: number, ...keysAndArgs: string[]) => Promise<number[]>;

/** Registers the sync script on the client once and returns a caller for it. */
export function defineSyncScript(client: RedisClient): (keys: string[], args: string[]) => Promise<number[]> {
  const commands = client as unknown as Record<string, SyncCommand | undefined>;
  if (typeof commands[COMMAND] !== 'function') client.defineCommand(COMMAND, { lua: SYNC_LUA });
  return (keys, args) => (commands[COMMAND] as SyncCommand).call(client, keys.length, ...keys, ...args);
}
