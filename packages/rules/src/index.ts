export type { RuleProblem } from './errors.js';
export { isRulesError, RulesError } from './errors.js';
export { loadRules } from './load-rules.js';
export type { ParseRulesOptions } from './parse-rules.js';
export { parseRules } from './parse-rules.js';
export { UNIT_MS } from './read-rate-limit.js';
export type * from './types.js';
