import { createHash } from 'node:crypto';
import type { RedisClient } from '../client.js';
import { defineByKeyCount, fillToKeyCount } from '../commands.js';

/**
 * One call per hash slot reconciles every key of the slot. Each key is one window of one
 * policy slot of one client: a hash with a field per process and policy version holding that
 * one's cumulative count in the window. Writing a total, never adding a delta, makes a sync
 * idempotent: a call whose reply was lost is sent again with the same (or a larger) total and
 * counts once.
 *
 * KEYS: window hashes, one slot, the last repeated up to the command's key count (see
 * `defineSyncScript`). ARGV: the number of keys sent, then per key its field
 * ('<process id>:<policy set>:<incarnation>'), its total and the key's expiry in ms. Reply: per
 * key sent the sum over every field, this one's included.
 *
 * What sluice never writes there reads as no count, as a damaged decision key reads as no
 * state: a key of another type is replaced, a field that is no whole number from 0 to 2^53 adds
 * nothing. Failing the call instead would hold every client of the slot to its outage share,
 * and a negative count would admit past the limit.
 */
const SYNC_LUA = `
local out = {}
for i = 1, tonumber(ARGV[1]) do
  local key, field, total = KEYS[i], ARGV[3 * i - 1], ARGV[3 * i]
  -- On a key of another type HEXISTS returns an error, and so does HSET: the key is replaced.
  if total ~= '0' or redis.pcall('HEXISTS', key, field) ~= 0 then
    local written = redis.pcall('HSET', key, field, total)
    if type(written) == 'table' then
      -- Any other refusal (out of memory) fails the call, as it would have failed the write.
      if not string.find(written.err, 'WRONGTYPE', 1, true) then return written end
      redis.call('DEL', key)
      redis.call('HSET', key, field, total)
    end
    redis.call('PEXPIRE', key, ARGV[3 * i + 1])
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

/**
 * The key counts the script is registered for, a sync call carrying at most the largest. Each
 * key repeated to fill a count costs Redis one more string for the script's KEYS, so a call of
 * up to 16 keys is not filled at all and a larger one by fewer than 16 (by powers of two, a
 * call of 257 keys would send 255 more).
 */
export const SYNC_KEY_COUNTS: readonly number[] = Array.from({ length: 47 }, (_, i) =>
  i < 16 ? i + 1 : 16 * (i - 14),
);

type SyncCommand = (...keysAndArgs: string[]) => Promise<number[]>;

/**
 * Registers the sync script on the client once per key count (see `defineByKeyCount`) and
 * returns a caller for it; a call's keys are filled to their count in place. The names carry
 * the body's hash, so two versions of sluice on one client never run each other's script.
 */
export function defineSyncScript(client: RedisClient): (keys: string[], args: string[]) => Promise<number[]> {
  const hash = createHash('sha1').update(SYNC_LUA).digest('hex').slice(0, 12);
  const byCount = defineByKeyCount<SyncCommand>(
    client,
    SYNC_LUA,
    SYNC_KEY_COUNTS,
    (count) => `sluice_local_first_sync_${hash}_${count}`,
  );
  return (keys, args) => {
    const sent = keys.length;
    const keyCount = fillToKeyCount(keys, SYNC_KEY_COUNTS);
    return (byCount[keyCount] as SyncCommand).call(client, ...keys, String(sent), ...args);
  };
}
