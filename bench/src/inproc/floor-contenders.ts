import { LRUCache } from 'lru-cache';
import { type Contender, type ContenderFactory, limitFor, type Mode, windowFor } from './contender.js';

interface Count {
  windowStart: number;
  hits: number;
}

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
      return Promise.resolve({ allowed, hits: count.hits });
    },
    allowed: (result) => (result as { allowed: boolean }).allowed,
    close: () => {},
  };
}

/** How the reports name each floor: not a limiter, only its map and the clock. */
export const floorLabels: Record<string, string> = {
  'floor-map:memory': 'floor: a Map and the clock, no limiter',
  'floor-lru-cache:memory': 'floor: lru-cache and the clock, no limiter',
};

/**
 * Floors, listed with the peers: `floor-map`, a plain Map; `floor-lru-cache`, lru-cache, a
 * bounded LRU map (sluice's memory store keeps a strict LRU of its own).
 */
export const floorContenders: Record<string, ContenderFactory> = {
  'floor-map:memory': async ({ mode }) => {
    const counts = new Map<string, Count>();
    return fixedWindowOver(
      (key) => counts.get(key),
      (key, count) => counts.set(key, count),
      mode,
    );
  },
  'floor-lru-cache:memory': async ({ mode, maxKeys }) => {
    const counts = new LRUCache<string, Count>({ max: maxKeys });
    // One options object for every lookup, as sluice's memory store passes it.
    const options = {};
    return fixedWindowOver(
      (key) => counts.get(key, options),
      (key, count) => counts.set(key, count),
      mode,
    );
  },
};
