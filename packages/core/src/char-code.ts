/**
 * `String.prototype.charCodeAt`, for the per-request character loops to call through this
 * constant (`charCodeAt.call(text, i)`) rather than as a method. A library that subclasses
 * `String` (ioredis 6 does, for RESP3 verbatim strings) leaves `String.prototype` in dictionary
 * mode in V8 (Node 20); a loop compiled apart from its caller then looks `charCodeAt` up
 * through the generic LoadIC for every character, about 140 instructions each. Called through
 * a constant function, the optimising compiler reads the character directly.
 */
export const charCodeAt = String.prototype.charCodeAt;
