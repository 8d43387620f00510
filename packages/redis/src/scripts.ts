import { createHash } from 'node:crypto';
import type { AlgorithmName, Policy } from '@sluice/core';
import { decideLua } from './lua/decide.js';
import { fastLua, fastPreludeLua } from './lua/fast.js';
import type { FastAlgorithm } from './lua/fast-shape.js';
import { fixedWindowLua } from './lua/fixed-window.js';
import { gcraFast, gcraLua } from './lua/gcra.js';
import { leakyBucketLua } from './lua/leaky-bucket.js';
import { preludeLua } from './lua/prelude.js';
import { slidingWindowCounterFast, slidingWindowCounterLua } from './lua/sliding-window-counter.js';
import { slidingWindowLogLua } from './lua/sliding-window-log.js';
import { tokenBucketLua } from './lua/token-bucket.js';

/** One script of the fixed set: its Lua body and the SHA-1 Redis caches it under. */
export interface Script {
  readonly label: string;
  readonly lua: string;
  readonly sha: string;
}

const sources: Readonly<Record<AlgorithmName, string>> = {
  'token-bucket': tokenBucketLua,
  'leaky-bucket': leakyBucketLua,
  gcra: gcraLua,
  'fixed-window': fixedWindowLua,
  'sliding-window-log': slidingWindowLogLua,
  'sliding-window-counter': slidingWindowCounterLua,
};

/** The algorithms with a straight-line path (`lua/fast.ts`): each its decision inline, and its state's shape. */
const fastAlgorithms: Partial<Readonly<Record<AlgorithmName, FastAlgorithm>>> = {
  gcra: gcraFast,
  'sliding-window-counter': slidingWindowCounterFast,
};

function assemble(label: string, algorithmSources: readonly string[], fast?: FastAlgorithm): Script {
  const general = [preludeLua, ...algorithmSources, decideLua];
  // With a straight-line path, the general body is one function, run only when that path
  // cannot decide the call: its tables and closures are then built only when needed.
  const parts =
    fast === undefined ? general : ['local function general()', ...general, 'end', fastPreludeLua, fastLua(fast)];
  const lua = [`-- sluice ${label}`, ...parts].join('\n');
  return { label, lua, sha: createHash('sha1').update(lua).digest('hex') };
}

/**
 * Assembled once when the module loads, never per request: every distinct body costs Redis
 * script-cache memory, so the set stays small and fixed. A policy set of one algorithm runs
 * that algorithm's script; a set mixing algorithms runs the script holding them all.
 */
const byAlgorithm = new Map<AlgorithmName, Script>(
  (Object.entries(sources) as [AlgorithmName, string][]).map(([name, source]) => [
    name,
    assemble(name, [source], fastAlgorithms[name]),
  ]),
);
/** The script holding every algorithm, for a call whose decisions mix them. */
export const mixedScript = assemble('mixed', Object.values(sources));

export const scripts: readonly Script[] = [...byAlgorithm.values(), mixedScript];

export function scriptFor(policies: readonly Policy[]): Script {
  const first = (policies[0] as Policy).algorithm;
  return policies.every((p) => p.algorithm === first) ? (byAlgorithm.get(first) as Script) : mixedScript;
}
