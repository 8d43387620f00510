import { type AlgorithmName, algorithmNames } from '@sluice/core';
import { cheapestScriptContenders } from './cheapest-script-contenders.js';
import type { ContenderFactory } from './contender.js';
import { floorContenders } from './floor-contenders.js';
import { peerContenders } from './peer-contenders.js';
import { rulesContenders } from './rules-contenders.js';
import { sluiceMemory, sluiceRedis } from './sluice-contenders.js';

/**
 * The factory of a contender, which loads the packages that contender needs when it is called
 * (ioredis, a peer's, the OpenTelemetry SDK): each cell runs in a fresh process, and loading
 * every contender's packages cost each some 0.4 s of start-up, where node itself takes 0.14 s.
 *
 * Contender ids: `sluice:<store>:<algorithm>[:3p|:ap|:subscriber|:metrics]` for sluice (3p = the
 * three-policy set, ap = a Redis client with auto-pipelining, subscriber / metrics = the memory
 * store's decisions watched: see `watchers.ts`), `<package>:<store>` for the peers,
 * `floor-<map>:memory` for the floors, `cheapest-<binary|text>-script:redis:<algorithm>[:3p]` for sluice's Redis
 * store on the cheapest script (`cheapest-script.ts`).
 */
export function contenderFor(id: string): ContenderFactory {
  const peerOrFloor = peerContenders[id] ?? floorContenders[id] ?? cheapestScriptContenders[id] ?? rulesContenders[id];
  if (peerOrFloor !== undefined) return peerOrFloor;
  const [family, store, algorithm, variant] = id.split(':');
  if (family !== 'sluice' || !algorithmNames.includes(algorithm as AlgorithmName)) {
    throw new Error(`unknown contender ${id}`);
  }
  const count = variant === '3p' ? 3 : 1;
  const watcher = variant === 'subscriber' || variant === 'metrics' ? variant : 'none';
  if (store === 'memory') return (setup) => sluiceMemory(algorithm as AlgorithmName, setup, count, watcher);
  if (store === 'redis') return (setup) => sluiceRedis(algorithm as AlgorithmName, setup, count, variant === 'ap');
  throw new Error(`unknown store in ${id}`);
}

export const memoryPeers = Object.keys(peerContenders).filter((id) => id.endsWith(':memory'));
/** Not limiters: what a bare map and the clock cost, for reading the memory figures against. */
export const memoryFloors = Object.keys(floorContenders);
export const redisPeers = Object.keys(peerContenders).filter((id) => id.endsWith(':redis'));
/** Not a decision: matching a request against a rule set of 1,000 descriptors. */
export const rulesMatchers = Object.keys(rulesContenders);
