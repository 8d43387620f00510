import type { AlgorithmName } from '@sluice/core';

/** Every algorithm sluice has, for tests that run each one. */
export const ALL_ALGORITHMS: readonly AlgorithmName[] = [
  'token-bucket',
  'leaky-bucket',
  'gcra',
  'fixed-window',
  'sliding-window-counter',
  'sliding-window-log',
];
