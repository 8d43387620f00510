import type { AlgorithmName } from '../types.js';
import type { Algorithms } from './algorithm.js';
import { fixedWindow } from './fixed-window.js';
import { gcra } from './gcra.js';
import { leakyBucket } from './leaky-bucket.js';
import { slidingWindowCounter } from './sliding-window-counter.js';
import { slidingWindowLog } from './sliding-window-log.js';
import { tokenBucket } from './token-bucket.js';

/** The reference algorithms, by name. */
export const algorithms: Algorithms = {
  'token-bucket': tokenBucket,
  'leaky-bucket': leakyBucket,
  gcra,
  'fixed-window': fixedWindow,
  'sliding-window-log': slidingWindowLog,
  'sliding-window-counter': slidingWindowCounter,
};

export const algorithmNames = Object.keys(algorithms) as AlgorithmName[];
