import type { RedisClient } from './client.js';
import { type Script, scripts } from './scripts.js';

/**
 * The key counts each script is registered for. ioredis fixes `numberOfKeys` per command; a
 * call with fewer keys repeats its last key up to the next count (a repeated key is still a
 * declared key of the same slot, and the script reads only the keys its decisions name).
 */
const KEY_COUNTS: readonly number[] = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32];
/** A decision's keys are its client key and one per log policy, so 16 always fit in one call. */
export const MAX_POLICIES = 16;

export type ScriptCall = (script: Script, keys: string[], args: string[]) => Promise<unknown>;

type Command = (...args: string[]) => Promise<unknown>;

const commandName = (script: Script, keyCount: number) =>
  `sluice_${script.label.replaceAll('-', '_')}_${script.sha.slice(0, 12)}_${keyCount}`;

/**
 * Registers every script with ioredis `defineCommand`, all at once and up front. defineCommand
 * sends EVALSHA, falls back to EVAL on NOSCRIPT (the script did not run, so the resend cannot
 * count twice) and tracks per connection, on Redis and Cluster alike, what is loaded.
 *
 * Up front, because ioredis copies custom commands into an auto-pipeline when it creates it:
 * a command defined later would be missing from a pipeline already open, and the call would
 * fail there. A fixed `numberOfKeys` keeps the first argument a key, which is how ioredis
 * routes an auto-pipelined call to its Cluster node. The names carry the body's hash, so two
 * versions of sluice on one client never run each other's script, and stores sharing a client
 * share the commands.
 */
export function defineScripts(client: RedisClient): ScriptCall {
  const commands = client as unknown as Record<string, Command | undefined>;
  // Each script's command by key count, looked up once: a name built per call is a new
  // string, which the property lookup then has to hash and find in the runtime.
  const byScript = new Map<Script, Command[]>();
  for (const script of scripts) {
    const byCount: Command[] = [];
    for (const numberOfKeys of KEY_COUNTS) {
      const name = commandName(script, numberOfKeys);
      if (typeof commands[name] !== 'function') client.defineCommand(name, { numberOfKeys, lua: script.lua });
      // The Buffer variant: the reply is binary and must not be decoded as UTF-8.
      byCount[numberOfKeys] = commands[`${name}Buffer`] as Command;
    }
    byScript.set(script, byCount);
  }
  return (script, keys, args) => {
    const keyCount = KEY_COUNTS.find((count) => count >= keys.length) as number;
    const last = keys[keys.length - 1] as string;
    while (keys.length < keyCount) keys.push(last);
    return ((byScript.get(script) as Command[])[keyCount] as Command).call(client, ...keys, ...args);
  };
}
