import { createHash } from 'node:crypto';
import { type AlgorithmName, createLimiter, type RateLimitStore } from '@sluice/core';
import { Redis } from 'ioredis';
import { exportOf } from '../inproc/contender.js';
import { type CreateRedisStore, sluiceClientOptions, sluiceOptions } from '../inproc/sluice-contenders.js';

/** redis-benchmark puts a random number wherever this appears in an argument. */
export const RANDOM = '__rand_int__';

export interface CapturedScript {
  label: string;
  algorithm: AlgorithmName;
  lua: string;
  sha: string;
  /** The EVALSHA arguments after the SHA: number of keys, keys, then ARGV, with the client keys random. */
  args: string[];
  /** How many decisions the call carries: 1, or a whole batch of concurrent ones. */
  decisions: number;
}

/** A failed capture is reported as such; the limiter's own warning would only repeat it. */
const quiet = { warn: () => {} };

interface SentCommand {
  name: string;
  args: unknown[];
}

/**
 * Finds the exact script and arguments sluice's Redis store sends for one decision, by
 * watching the commands its ioredis client writes. The benchmark then replays that call,
 * so it measures the store's real script and key layout without knowing either.
 */
export async function captureScript(
  port: number,
  algorithm: AlgorithmName,
  policyCount: 1 | 3,
  decisions: 1 | 32 = 1,
): Promise<CapturedScript> {
  const createRedisStore = await exportOf<CreateRedisStore>('@sluice/redis', 'createRedisStore');
  const client = new Redis(port, '127.0.0.1', sluiceClientOptions(false));
  const sent: SentCommand[] = [];
  const send = client.sendCommand.bind(client);
  client.sendCommand = ((command: SentCommand, ...rest: unknown[]) => {
    sent.push({ name: command.name, args: [...command.args] });
    return (send as (...a: unknown[]) => unknown)(command, ...rest);
  }) as typeof client.sendCommand;
  try {
    await client.ping();
    const store: RateLimitStore = createRedisStore({ client });
    const options = sluiceOptions(algorithm, { mode: 'pass', redisPort: port, maxKeys: 0 }, policyCount);
    // One prefix for every replayed call: a key that named its algorithm would be longer for
    // some (18 bytes more for the sliding window counter than for gcra), and with 100k clients
    // kept the counter's 26 bytes over this one cost its call 0.5 µs of Redis time. Every
    // replay starts from an empty Redis.
    const limiter = createLimiter({ ...options, store, prefix: 'rb', logger: quiet });
    // Asked in one tick, a batch of decisions travels in one call; each gets its own random key.
    const asked = Array.from({ length: decisions }, (_, i) => limiter.consume(`${RANDOM}-${i}`));
    for (const decision of await Promise.all(asked)) {
      if (decision.reason !== undefined) throw new Error(`the store did not decide: ${decision.reason}`);
    }
    const call = sent.find((c) => c.name === 'evalsha' || c.name === 'eval');
    if (call === undefined) throw new Error('the store sent no EVAL or EVALSHA');
    const [first, ...args] = call.args.map(String);
    const scripts = Object.values(
      (client as unknown as { scriptsSet: Record<string, { lua: string; sha: string }> }).scriptsSet,
    );
    const lua = call.name === 'eval' ? (first as string) : scripts.find((s) => s.sha === first)?.lua;
    if (lua === undefined) throw new Error('the script source is not registered on the client');
    const sha = createHash('sha1').update(lua).digest('hex');
    if (!args.some((a) => a.includes(RANDOM))) throw new Error('the client key does not appear in the arguments');
    const label = `sluice ${algorithm}${policyCount === 3 ? ', 3 policies' : ''}${decisions > 1 ? `, ${decisions} decisions per call` : ''}`;
    return { label, algorithm, lua, sha, args, decisions };
  } finally {
    client.disconnect();
  }
}
