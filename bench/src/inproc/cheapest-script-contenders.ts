import type { Redis } from 'ioredis';
import { type CheapestAlgorithm, cheapestScript, type Encoding } from './cheapest-script.js';
import { type Contender, type ContenderFactory, exportOf, type Setup } from './contender.js';
import {
  type CreateRedisStore,
  decisionOf,
  redisClient,
  sluiceClientOptions,
  sluiceOptions,
} from './sluice-contenders.js';

/** ioredis's own properties for a command `defineCommand` registered. */
type Commands = Record<string, unknown>;

/** The command names and key counts sluice's Redis store registers for `algorithm`'s script. */
function sluiceCommandsFor(
  createRedisStore: CreateRedisStore,
  algorithm: CheapestAlgorithm,
  Client: typeof Redis,
): { name: string; keys: number }[] {
  const scratch = new Client({ lazyConnect: true, maxRetriesPerRequest: 0 });
  createRedisStore({ client: scratch });
  scratch.disconnect();
  const pattern = new RegExp(`^sluice_${algorithm.replaceAll('-', '_')}_[0-9a-f]{12}_(\\d+)$`);
  const commands = Object.keys(scratch as unknown as Commands).flatMap((name) => {
    const keys = pattern.exec(name)?.[1];
    return keys === undefined ? [] : [{ name, keys: Number(keys) }];
  });
  if (commands.length === 0) throw new Error(`sluice's Redis store registered no ${algorithm} command`);
  return commands;
}

/**
 * sluice's Redis store and limiter, called as a user calls them, on a client whose commands
 * for `algorithm`'s script run the cheapest script instead (`cheapest-script.ts`): the store
 * registers its commands only where the client has none of that name. Everything on the
 * client's side (arguments, batching, the reply read into a decision) is sluice's, so the
 * cell differs from sluice's own only by the script. Checked before it is measured: a
 * decision must leave the cheapest script's state.
 */
async function cheapestScriptStore(
  algorithm: CheapestAlgorithm,
  encoding: Encoding,
  setup: Setup,
  count: 1 | 3,
): Promise<Contender> {
  const createRedisStore = await exportOf<CreateRedisStore>('@sluice/redis', 'createRedisStore');
  const client = await redisClient(setup, sluiceClientOptions(false));
  const { Redis: Client } = await import('ioredis');
  const lua = cheapestScript(algorithm, encoding);
  for (const { name, keys } of sluiceCommandsFor(createRedisStore, algorithm, Client)) {
    client.defineCommand(name, { numberOfKeys: keys, lua });
  }
  const store = createRedisStore({ client });
  // A limit of one an hour, so the state outlives the check: the measured limits' last a millisecond.
  const check = decisionOf(store, { limit: 1, window: '1h', algorithm }, () => {});
  const checkKey = `cheapest-script-check-${process.pid}`;
  const allowed = check.allowed(await check.call(checkKey), false);
  const [stateKey] = await client.keys(`*${checkKey}*`);
  const state = stateKey === undefined ? null : await client.getBuffer(stateKey);
  if (stateKey !== undefined) await client.del(stateKey);
  if (allowed !== true || state === null || !isCheapestState(algorithm, encoding, state)) {
    throw new Error(`the cheapest ${algorithm} script in ${encoding} did not decide (state ${state?.toString('hex')})`);
  }
  return decisionOf(store, sluiceOptions(algorithm, setup, count), () => client.disconnect());
}

/** The contender id of sluice's Redis store on the cheapest script for `algorithm`, state in `encoding`. */
export const cheapestScriptId = (algorithm: CheapestAlgorithm, encoding: Encoding): string =>
  `cheapest-${encoding}-script:redis:${algorithm}`;

/** Whether a contender id is one of these: the tables of one-policy decisions leave them out. */
export const isCheapestScript = (id: string): boolean => id.startsWith('cheapest-');

/**
 * Whether `state` is what a one-policy check leaves on the cheapest script: in binary one number
 * (gcra) or three (the counter); in text a head, then the state's own numbers (two, or three),
 * units spent (1) and reset time.
 */
function isCheapestState(algorithm: CheapestAlgorithm, encoding: Encoding, state: Buffer): boolean {
  if (encoding === 'binary') return state.length === (algorithm === 'gcra' ? 8 : 24);
  const text = state.toString();
  const numbers = algorithm === 'gcra' ? /^\d+,\d+;1,\d+$/ : /^\d+,\d+,\d+;1,\d+$/;
  return numbers.test(text.slice(text.indexOf('=') + 1));
}

/** Ids as sluice's: `cheapest-<encoding>-script:redis:<algorithm>[:3p]`. */
export const cheapestScriptContenders: Record<string, ContenderFactory> = Object.fromEntries(
  (['gcra', 'sliding-window-counter'] as const).flatMap((algorithm) =>
    (['binary', 'text'] as const).flatMap((encoding) => [
      [cheapestScriptId(algorithm, encoding), (setup: Setup) => cheapestScriptStore(algorithm, encoding, setup, 1)],
      [
        `${cheapestScriptId(algorithm, encoding)}:3p`,
        (setup: Setup) => cheapestScriptStore(algorithm, encoding, setup, 3),
      ],
    ]),
  ),
);
