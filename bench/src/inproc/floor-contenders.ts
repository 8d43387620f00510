import { LRUCache } from 'lru-cache';
import { type Contender, type ContenderFactory, limitFor, type Mode, windowFor } from './contender.js';

interface Count {
  windowStart: number;
  hits: number;
}

/** What a floor answers with, from its count: `{ allowed, hits }`, or a decision's fields. */
type Answer = (allowed: boolean, count: Count, now: number) => unknown;

const counted: Answer = (allowed, count) => ({ allowed, hits: count.hits });

/**
 * The least an in-process limiter can cost on this machine: a fixed-window count per key,
 * no options, no headers, no policies, but the clock read on every decision (a limiter that
 * does not read it cannot know when a window ends) and the answer in a promise, as every
 * limiter here gives it. A rejected request spends nothing.
 */
function fixedWindowOver(
  read: (key: string) => Count | undefined,
  write: (key: string, count: Count) => void,
  mode: Mode,
  answer: Answer = counted,
): Contender {
  const windowMs = windowFor(mode);
  const max = limitFor(mode);
  return {
    call(key) {
      const now = Date.now();
      let count = read(key);
      if (count === undefined) {
        count = { windowStart: now, hits: 0 };
        write(key, count);
      } else if (now - count.windowStart >= windowMs) {
        count.windowStart = now;
        count.hits = 0;
      }
      const allowed = count.hits < max;
      if (allowed) count.hits++;
      return Promise.resolve(answer(allowed, count, now));
    },
    allowed: (result) => (result as { allowed: boolean }).allowed,
    close: () => {},
  };
}

/**
 * The answer of `floor-decision`: only the fields SPEC §3 makes binding for a decision of one
 * policy (the decision's six and its one policy entry's five), filled from the count. Any
 * implementation of `createLimiter` returns at least these, fresh on every call: a caller may
 * keep a decision.
 */
function bindingDecision(mode: Mode): Answer {
  const windowMs = windowFor(mode);
  const limit = limitFor(mode);
  return (allowed, count, now) => {
    const remaining = limit - count.hits;
    const resetAfterMs = count.windowStart + windowMs - now;
    return {
      allowed,
      limit,
      remaining,
      resetAfterMs,
      retryAfterMs: allowed ? 0 : resetAfterMs,
      delayMs: 0,
      policies: [{ name: 'default', limit, remaining, resetAfterMs, allowed }],
    };
  };
}

/** How the reports name each floor: not a limiter, only its map and the clock. */
export const floorLabels: Record<string, string> = {
  'floor-map:memory': 'floor: a Map and the clock, no limiter',
  'floor-lru-cache:memory': 'floor: lru-cache and the clock, no limiter',
  'floor-decision:memory': "floor: a Map, the clock and a decision's binding fields",
};

/** The fixed-window floor over a plain Map, unbounded: the cheapest map there is. */
function overMap(mode: Mode, answer?: Answer): Contender {
  const counts = new Map<string, Count>();
  return fixedWindowOver(
    (key) => counts.get(key),
    (key, count) => counts.set(key, count),
    mode,
    answer,
  );
}

/** The fixed-window floor over lru-cache, bounded to `maxKeys`. */
function overLruCache(maxKeys: number, mode: Mode, answer?: Answer): Contender {
  const counts = new LRUCache<string, Count>({ max: maxKeys });
  // One options object for every lookup, as sluice's memory store passes it.
  const options = {};
  return fixedWindowOver(
    (key) => counts.get(key, options),
    (key, count) => counts.set(key, count),
    mode,
    answer,
  );
}

/**
 * Floors, listed with the peers: `floor-map`, a plain Map; `floor-lru-cache`, lru-cache, a
 * bounded LRU map (sluice's memory store keeps a strict LRU of its own); `floor-decision`, the
 * Map floor answering with a decision's binding fields: the least any limiter with sluice's
 * API can cost, whatever map it bounds its keys with.
 */
export const floorContenders: Record<string, ContenderFactory> = {
  'floor-map:memory': async ({ mode }) => overMap(mode),
  'floor-lru-cache:memory': async ({ mode, maxKeys }) => overLruCache(maxKeys, mode),
  'floor-decision:memory': async ({ mode }) => overMap(mode, bindingDecision(mode)),
};
