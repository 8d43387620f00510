import { type AlgorithmName, algorithmNames } from '@sluice/core';
import { cheapestScriptId } from './cheapest-script-contenders.js';
import type { Mode } from './contender.js';
import { memoryFloors, memoryPeers, redisPeers, rulesMatchers } from './contenders.js';

export interface Cell {
  contender: string;
  store: 'memory' | 'redis';
  keys: number;
  concurrency: number;
  mode: Mode;
  /**
   * Set on the two cells of a pair, listed one after the other: `runInproc` runs them at once
   * on the one measured core, and a ratio of the two reads their decisions per CPU-second.
   */
  pair?: number;
}

const KEYS = [100_000, 1];
const CONCURRENCY = [1, 100];
const MODES: Mode[] = ['pass', 'deny'];
/** Peers whose API has a reject path of its own; the others only count, and their middleware decides. */
const denyingPeers = new Set(['rate-limiter-flexible:memory', 'rate-limiter-flexible:redis']);
const TARGET_ALGORITHMS = ['gcra', 'sliding-window-counter'] as const satisfies readonly AlgorithmName[];

/** The peer the stretch memory targets name, and a reference of every memory pair. */
const EXPRESS_RATE_LIMIT = 'express-rate-limit:memory';

const storeOf = (id: string): Cell['store'] => (id.includes(':redis') ? 'redis' : 'memory');

function grid(contender: string, modes: readonly Mode[]): Cell[] {
  const cells: Cell[] = [];
  for (const keys of KEYS) {
    for (const concurrency of CONCURRENCY) {
      for (const mode of modes) {
        // A sliding log keeps one entry per allowed request: a hot key never denied grows without bound.
        if (contender.endsWith('sliding-window-log') && keys === 1 && mode === 'pass') continue;
        cells.push({ contender, store: storeOf(contender), keys, concurrency, mode });
      }
    }
  }
  return cells;
}

/** A cell as the targets read it: 100k keys, sequential for memory, 100 in flight for Redis. */
const targetCell = (contender: string, keys = 100_000, mode: Mode = 'pass'): Cell => {
  const store = storeOf(contender);
  return { contender, store, keys, concurrency: store === 'redis' ? 100 : 1, mode };
};

const threePolicyCells = (): Cell[] =>
  TARGET_ALGORITHMS.flatMap((a) => [targetCell(`sluice:memory:${a}:3p`), targetCell(`sluice:redis:${a}:3p`)]);

/**
 * The memory targets' pairs: each sluice cell with each reference its ratios divide it by (the
 * lru-cache floor and express-rate-limit), and the decision floor, which a verdict of "out of
 * reach" reads, against the same two. The full run adds the Map floor against both and the two
 * references against each other, which the targets table shows beside them.
 */
function memoryPairs(full: boolean): [string, string][] {
  const lru = 'floor-lru-cache:memory';
  const measured = [
    ...TARGET_ALGORITHMS.map((a) => `sluice:memory:${a}`),
    'floor-decision:memory',
    ...(full ? ['floor-map:memory'] : []),
  ];
  const withBoth = measured.flatMap((id): [string, string][] => [
    [id, lru],
    [id, EXPRESS_RATE_LIMIT],
  ]);
  return full ? [...withBoth, [lru, EXPRESS_RATE_LIMIT]] : withBoth;
}

let pairsPlanned = 0;
const paired = ([a, b]: [string, string]): Cell[] => {
  const pair = pairsPlanned++;
  return [
    { ...targetCell(a), pair },
    { ...targetCell(b), pair },
  ];
};

/**
 * The cost of watching decisions: gcra on the memory store with nobody listening, paired once
 * with a subscriber that does nothing and once with `enableMetrics`, `rounds` times. Each cost
 * is the quotient of a pair's decisions per CPU-second, as the memory targets' are.
 */
export function watchPlan(rounds: number): Cell[] {
  const unwatched = 'sluice:memory:gcra';
  const watched = ['sluice:memory:gcra:subscriber', 'sluice:memory:gcra:metrics'];
  return Array.from({ length: rounds }, () => watched.flatMap((id) => paired([unwatched, id]))).flat();
}

/** sluice's store on the cheapest script for `algorithm` (`cheapest-script.ts`), each encoding's one-policy cell beside its three-policy one. */
const cheapestCells = (algorithm: (typeof TARGET_ALGORITHMS)[number]): Cell[] =>
  (['binary', 'text'] as const).flatMap((encoding) => {
    const id = cheapestScriptId(algorithm, encoding);
    return [targetCell(`${id}:3p`), targetCell(id)];
  });

/**
 * One round of the cells the targets read. The memory cells in pairs, run at once on one core:
 * the host's speed swings by half within seconds here, and two processes sharing a core meet
 * the same swings, where runs one after the other did not. The Redis cells one after the other,
 * each sluice cell between the two its ratios divide it by (rate-limiter-flexible and its
 * three-policy cell), a reference between two sluice cells serving both: two clients at once
 * would share the one Redis server as well as the core; the cheapest scripts' cells beside the
 * three-policy cells they bound. Then the other peer the tables show beside them, and the rules
 * matchers.
 */
function targetCells(full: boolean): Cell[] {
  const [first, second] = TARGET_ALGORITHMS;
  return [
    ...memoryPairs(full).flatMap(paired),
    ...cheapestCells(first),
    targetCell(`sluice:redis:${first}:3p`),
    targetCell(`sluice:redis:${first}`),
    targetCell('rate-limiter-flexible:redis'),
    targetCell(`sluice:redis:${second}`),
    targetCell(`sluice:redis:${second}:3p`),
    ...cheapestCells(second),
    targetCell('rate-limiter-flexible:memory'),
    ...rulesMatchers.map((id) => targetCell(id)),
  ];
}

/**
 * The full matrix of the issue: every algorithm, both stores, both key sets, both concurrencies,
 * both paths; then `rounds` rounds of the target cells, so that each target reads the median of
 * several quotients of neighbouring runs instead of one.
 */
export function fullPlan(rounds: number): Cell[] {
  const sluice = (['memory', 'redis'] as const).flatMap((store) =>
    algorithmNames.flatMap((a) => grid(`sluice:${store}:${a}`, MODES)),
  );
  const peers = [...memoryPeers, ...redisPeers].flatMap((id) => grid(id, denyingPeers.has(id) ? MODES : ['pass']));
  const floors = memoryFloors.flatMap((id) => grid(id, MODES));
  const autoPipelined = TARGET_ALGORITHMS.map((a) => targetCell(`sluice:redis:${a}:ap`));
  const repeats = Array.from({ length: rounds }, () => targetCells(true)).flat();
  return [...sluice, ...peers, ...floors, ...threePolicyCells(), ...autoPipelined, ...repeats];
}

/**
 * What the targets need, and one cell run alone per floor, targeted sluice cell and the peer
 * the stretch target names: the tables read cells run alone, a pair's rates being shared. The
 * other peers' cells are the full run's.
 */
export function quickPlan(): Cell[] {
  const round = targetCells(false);
  const alone = new Set(round.filter((c) => c.pair === undefined).map((c) => c.contender));
  const once = [...TARGET_ALGORITHMS.map((a) => `sluice:memory:${a}`), ...memoryFloors, EXPRESS_RATE_LIMIT];
  return [
    ...round,
    ...TARGET_ALGORITHMS.map((a) => targetCell(`sluice:memory:${a}`, 1, 'deny')),
    ...once.filter((id) => !alone.has(id)).map((id) => targetCell(id)),
  ];
}
