import type { RunResults } from '../results.js';
import { serviceTargets } from '../service/targets.js';
import type { HttpRow } from './http-summary.js';
import { redisStoreTargets } from './local-first-targets.js';
import type { TargetCheck, TargetSection } from './target-check.js';
import { httpTargets } from './targets-http.js';
import { heapTargets, memoryTargets, redisTargets, watchTargets } from './targets-inproc.js';

export type { TargetCheck } from './target-check.js';

/** The targets, section by section, in the order the report lists them. Add a section here. */
export const targetSections: TargetSection[] = [
  memoryTargets,
  heapTargets,
  redisTargets,
  httpTargets,
  (results, http) => redisStoreTargets(results.http, http),
  watchTargets,
  (results) => serviceTargets(results),
];

export const checkTargets = (results: RunResults, http: readonly HttpRow[]): TargetCheck[] =>
  targetSections.flatMap((section) => section(results, http));
