import { fastManyLua } from './fast-many.js';
import type { FastAlgorithm } from './fast-shape.js';
import { UNROLLED_POLICIES, unrolledLua } from './fast-unrolled.js';

/** What the straight-line path reads, made local; it comes first. */
export const fastPreludeLua = `
local KEYS, ARGV, find, format = KEYS, ARGV, string.find, string.format
`;

/**
 * The straight-line path of a script: decisions that consume, all with the same arguments (one
 * run: the usual call, one decision or a batch of one limiter's), for a limiter whose policies
 * are all of the algorithm the script names, over distinct clients whose strings hold exactly
 * this version's states of those policies, in order, or nothing. Decisions of up to
 * `UNROLLED_POLICIES` policies, the usual call, are decided in locals by their policy count's block
 * (`fast-unrolled.ts`); more policies take the loop of `fast-many.ts`. Neither builds the
 * general body's tables and closures. They read and write exactly the strings the general
 * body does, with a TTL at least as long (a charge may keep the key's TTL: see `chargeWrite`
 * in fast-shape.ts), so any other call (several runs, a refund, a client twice in one batch,
 * another version's state, a slot this limiter no longer has, a string in sluice's earlier
 * text layout) runs the general body instead, which has by then nothing to undo: this path
 * writes only once it knows it decides the whole call.
 *
 * Inside Redis a script pays for every C function it calls and every object it allocates
 * (a `tonumber` parses its text twice, arithmetic on a numeric string once; `format` copies a
 * `%s` through sprintf, where `..` joins it; `PSETEX` is `SET ... PX` with one argument
 * fewer; a local function is a closure built on every call, with an object for each local it
 * captures; `format` renders a number through sprintf, some 1.5k instructions), so a string's
 * directory is compared whole by one plain `find`, its numbers read by one `struct.unpack` and
 * written by one `struct.pack`, the header cut only when it is not the usual one, the blocks
 * of a few policies written out rather than called or looped, and nothing built that a
 * decision does not need: each policy's decision is the algorithm's own, written inline over
 * numbered locals, neither a function called nor a table read (`FastAlgorithm` in
 * fast-shape.ts). Every string a script makes is hashed byte by byte as Redis's Lua interns
 * it (some 11 instructions a byte), so the path makes none it can do without.
 */
export const fastLua = (algorithm: FastAlgorithm): string => `
local FAST_NAME = '${algorithm.name}'
-- One run of consuming decisions: its three entries (see the header). The usual headers, one
-- decision of cost 1 on Redis's clock of 1 to ${UNROLLED_POLICIES} policies, are compared whole (Lua
-- interns every string, so each comparison is of two addresses) rather than cut by a pattern
-- (some 4k instructions).
local decisions, cost, count, now, min_ttl, redis_now = 1, 1, 1, '', 60000, 0
local header = ARGV[1]
if header ~= ${usualHeader(algorithm, 1)} then
${usualCounts(algorithm)}
  else
    local _, op, kinds
    _, _, decisions, op, cost, kinds, now = find(header, '^(%d+) (%a+) (%d+) ([^ ]+) ?(%d*)$')
    if op ~= 'consume' then return general() end
    -- Every policy this script's algorithm: the kinds are its name, count times.
    count = (#kinds + 1) / ${algorithm.name.length + 1}
    if kinds ~= string.rep(FAST_NAME .. ',', count - 1) .. FAST_NAME then return general() end
    decisions, cost = decisions + 0, cost + 0
  end
end
-- One run only: several (limiters, costs or clocks in one call) are the general body's.
if #ARGV ~= 3 then return general() end
if now == '' then
  -- Whole ms by % (inline), where floor is a C call.
  local time = redis.call('TIME')
  local us = time[2] + 0
  redis_now = time[1] * 1000 + (us - us % 1000) / 1000
  now, min_ttl = redis_now, 0
else
  now = now + 0
end
-- A few policies: written out per policy count. More: the loop.
${dispatch(algorithm)}
end
${fastManyLua(algorithm)}
`;

/** The header of one decision of cost 1 on Redis's clock, over `count` policies of the algorithm, as a Lua literal. */
const usualHeader = (algorithm: FastAlgorithm, count: number): string =>
  `'1 consume 1 ${Array<string>(count).fill(algorithm.name).join(',')}'`;

/** The comparisons finding the usual header of 2 to `UNROLLED_POLICIES` policies. */
const usualCounts = (algorithm: FastAlgorithm): string =>
  Array.from({ length: UNROLLED_POLICIES - 1 }, (_, index) => {
    const count = index + 2;
    return `  ${count === 2 ? 'if' : 'elseif'} header == ${usualHeader(algorithm, count)} then\n    count = ${count}`;
  }).join('\n');

/** Each policy count up to `UNROLLED_POLICIES`, its own block (`fast-unrolled.ts`). */
const dispatch = (algorithm: FastAlgorithm): string =>
  Array.from({ length: UNROLLED_POLICIES }, (_, index) => {
    const count = index + 1;
    // Each block indented under its branch.
    const block = unrolledLua(algorithm, count).replace(/\n(?=.)/g, '\n  ');
    return `${count === 1 ? 'if' : 'elseif'} count == ${count} then${block}`;
  }).join('\n');
