import { SluiceError } from '@sluice/core';
import type { RedisClient } from './client.js';
import { type Script, scripts } from './scripts.js';

/**
 * The key counts each script is registered for. ioredis fixes `numberOfKeys` per command; a
 * call with fewer keys repeats its last key up to the next count (a repeated key is still a
 * declared key of the same slot, and the script reads only as many as it has policies).
 */
export const KEY_COUNTS: readonly number[] = [1, 2, 4, 8, 16];
export const MAX_POLICIES = 16;

export type ScriptCall = (script: Script, keys: readonly string[], args: readonly string[]) => Promise<unknown>;

type Commands = Record<string, ((...args: string[]) => Promise<unknown>) | undefined>;

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
  const commands = client as unknown as Commands;
  for (const script of scripts) {
    for (const numberOfKeys of KEY_COUNTS) {
      const name = commandName(script, numberOfKeys);
      if (typeof commands[name] !== 'function') client.defineCommand(name, { numberOfKeys, lua: script.lua });
    }
  }
  return (script, keys, args) => {
    const keyCount = KEY_COUNTS.find((count) => count >= keys.length);
    if (keyCount === undefined || keys.length === 0) {
      throw new SluiceError(
        'ERR_SLUICE_INVALID_POLICIES',
        `[sluice] The Redis store decides 1 to ${MAX_POLICIES} policies at once; this limiter has ${keys.length}.`,
      );
    }
    const padded = keys.slice();
    while (padded.length < keyCount) padded.push(keys[keys.length - 1] as string);
    return (commands[commandName(script, keyCount)] as (...args: string[]) => Promise<unknown>).call(
      client,
      ...padded,
      ...args,
    );
  };
}
