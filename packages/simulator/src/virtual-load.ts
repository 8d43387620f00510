import { SluiceError } from '@sluice/core';

/**
 * Why elastic throttling needs a `load` of its own in virtual time: left out, core measures this
 * machine's event loop, so what a run decides would hang on how busy the computer was, not
 * on the traffic, and two runs of the same traffic could differ.
 */
export const ELASTIC_NEEDS_LOAD =
  "elastic throttling needs its own `throttle.load` in a simulation: the default measures this machine's event loop, not the simulated traffic, so runs of the same traffic would decide differently";

/** The error `simulate` and `pnpm simulate --throttle` both throw for elastic mode without a load of its own. */
export const elasticWithoutLoad = (where: string): SluiceError =>
  new SluiceError('ERR_SLUICE_INVALID_OPTION', `[sluice] ${where}: ${ELASTIC_NEEDS_LOAD}.`);
