import type { RedisClient } from '../client.js';

/**
 * One call per hash slot reconciles every key of the slot. Each key is one window of one
 * policy slot of one client: a hash with a field per process and policy version holding that
 * one's cumulative count in the window. Writing a total, never adding a delta, makes a sync
 * idempotent: a call whose reply was lost is sent again with the same (or a larger) total and
 * counts once.
 *
 * KEYS: window hashes, one slot. ARGV: per key its field ('<process id>:<version>'), its total
 * and the key's expiry in ms. Reply: per key the sum over every field, this one's included.
 */
const SYNC_LUA = `
local out = {}
for i = 1, #KEYS do
  local field, total = ARGV[3 * i - 2], ARGV[3 * i - 1]
  if total ~= '0' or redis.call('HEXISTS', KEYS[i], field) == 1 then
    redis.call('HSET', KEYS[i], field, total)
    redis.call('PEXPIRE', KEYS[i], ARGV[3 * i])
  end
  local sum = 0
  for _, count in ipairs(redis.call('HVALS', KEYS[i])) do sum = sum + tonumber(count) end
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
