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

/**
 * Registers `lua` on the client as one command per key count in `counts`, each named by
 * `nameOf(count)` unless a command of that name is there already (two stores on one client
 * share them), and returns each count's command, indexed by the count; `variant` picks
 * ioredis's `Buffer` one, whose reply is not decoded as UTF-8. A fixed `numberOfKeys` keeps a
 * call's first argument a key, which is how ioredis routes an auto-pipelined call to its
 * Cluster node (a key count there sent calls for several masters into one pipeline, which it
 * refused whole).
 */
export function defineByKeyCount<C extends Command>(
  client: RedisClient,
  lua: string,
  counts: readonly number[],
  nameOf: (count: number) => string,
  variant: '' | 'Buffer' = '',
): C[] {
  const commands = client as unknown as Record<string, C | undefined>;
  const byCount: C[] = [];
  for (const numberOfKeys of counts) {
    const name = nameOf(numberOfKeys);
    if (typeof commands[name] !== 'function') client.defineCommand(name, { numberOfKeys, lua });
    byCount[numberOfKeys] = commands[`${name}${variant}`] as C;
  }
  return byCount;
}

/**
 * Repeats the last of `keys` up to the smallest of `counts` that holds them all, in place, and
 * returns that count: a repeated key is still a declared key of the same slot, which a script
 * reads only where its arguments name it. A module's own constant, not a declaration: the
 * decision path calls it, and optimised code checks a declared function's binding each time.
 */
export const fillToKeyCount = (keys: string[], counts: readonly number[]): number => {
  const keyCount = counts.find((count) => count >= keys.length) as number;
  const last = keys[keys.length - 1] as string;
  while (keys.length < keyCount) keys.push(last);
  return keyCount;
};

const commandName = (script: Script, keyCount: number) =>
  `sluice_${script.label.replaceAll('-', '_')}_${script.sha.slice(0, 12)}_${keyCount}`;

/**
 * Registers every script with ioredis `defineCommand`, all at once and up front. defineCommand
 * sends EVALSHA, falls back to EVAL on NOSCRIPT (the script did not run, so the resend cannot
 * count twice) and tracks per connection, on Redis and Cluster alike, what is loaded.
 *
 * Up front, because ioredis copies custom commands into an auto-pipeline when it creates it:
 * a command defined later would be missing from a pipeline already open, and the call would
 * fail there. Each is registered per key count (`defineByKeyCount`). The names carry the
 * body's hash, so two versions of sluice on one client never run each other's script, and
 * stores sharing a client share the commands.
 */
export function defineScripts(client: RedisClient): ScriptCall {
  // Each script's command by key count, looked up once: a name built per call is a new
  // string, which the property lookup then has to hash and find in the runtime. The Buffer
  // variant: the reply is binary and must not be decoded as UTF-8.
  const byScript = new Map<Script, Command[]>();
  for (const script of scripts) {
    byScript.set(
      script,
      defineByKeyCount(client, script.lua, KEY_COUNTS, (count) => commandName(script, count), 'Buffer'),
    );
  }
  return (script, keys, args) => {
    const keyCount = fillToKeyCount(keys, KEY_COUNTS);
    return ((byScript.get(script) as Command[])[keyCount] as Command).call(client, ...keys, ...args);
  };
}
