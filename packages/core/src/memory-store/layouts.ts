import type { Policy } from '../types.js';
import { segmentLength } from './entry.js';
import { withGetters } from './with-getters.js';

/**
 * What one segment of an entry holds: the namespace, and the policies whose states follow in
 * order. Ids are never reused, so a segment is never read as another layout's.
 */
export interface Layout {
  readonly id: number;
  readonly namespace: string;
  readonly policies: readonly Policy[];
  /** Values in a segment after its head. */
  readonly length: number;
  /** Whether a policy keeps a sliding log, held out of the segment's values. */
  readonly logs: boolean;
  /** Whether the bound has forgotten it: `of` brings it back. */
  readonly forgotten: boolean;
  /**
   * The count of filings from which `Layouts.stale` holds: half the bound past its own last
   * filing, or 0 once forgotten. One comparison decides staleness on every decision.
   */
  readonly dueAt: number;
}

/**
 * Layouts known at once. Beyond it the one used longest ago is forgotten: a segment of a
 * forgotten layout reads as no state, as an evicted key does, and is dropped when its client
 * is next decided on. This bounds what per-request policy sets (`policies(req)`) cost, however
 * many distinct ones arrive. Use is tracked by filing: a layout asked for is filed again as the
 * newest once half the bound has been filed since it was, so a layout is forgotten only after
 * at least `MAX_LAYOUTS / 2` others were filed since its limiter last decided. A limiter that
 * idled that long keeps its layout object, and its next decision brings the layout back under
 * the same id: its clients' states are read again unless another limiter decided on them and
 * dropped them meanwhile.
 */
export const MAX_LAYOUTS = 4096;

export interface Layouts {
  /** The layout of a limiter's policies under its namespace; cached per policy list. */
  of(namespace: string, policies: readonly Policy[]): Layout;
  /** A known layout by id. */
  byId(id: number): Layout | undefined;
  /** Whether a caller that keeps a layout must ask `of` for it again: forgotten, or due to be filed again. */
  stale(layout: Layout): boolean;
  readonly size: number;
}

const BY_KEY = Symbol('sluice.layouts-by-key');
interface Keyed {
  readonly [BY_KEY]: Map<string, KnownLayout>;
}
/** `size`, one getter for every `Layouts` (see `withGetters`). */
const layoutsGetters = {
  size(this: Keyed) {
    return this[BY_KEY].size;
  },
};

/** A layout as the table keeps it: its key in `byKey`. */
interface KnownLayout extends Layout {
  forgotten: boolean;
  dueAt: number;
  readonly key: string;
}

export function createLayouts(max = MAX_LAYOUTS): Layouts {
  const byKey = new Map<string, KnownLayout>();
  const byId = new Map<number, KnownLayout>();
  const cached = new WeakMap<readonly Policy[], KnownLayout>();
  let nextId = 0;
  // The last one asked for: most calls in a row come from one limiter.
  let lastPolicies: readonly Policy[] | undefined;
  let last: KnownLayout | undefined;

  // A field, not a `let` that `stale` shares: each read of such a variable is checked for its
  // temporal dead zone and its type, where a field's is known (some 3 instructions a decision).
  const filings = { count: 0 };
  const stale = (layout: Layout): boolean => filings.count >= layout.dueAt;

  /** Files the layout as the newest, forgetting the oldest beyond `max`. */
  const file = (layout: KnownLayout): void => {
    const current = byKey.get(layout.key);
    // Another limiter of these policies made a layout of its own while this one was forgotten:
    // that one stays, and this one's clients read as forgotten ones do.
    if (current !== undefined && current !== layout) return;
    byKey.delete(layout.key);
    layout.forgotten = false;
    layout.dueAt = ++filings.count + Math.floor(max / 2);
    byId.set(layout.id, layout);
    byKey.set(layout.key, layout);
    if (byKey.size > max) {
      const old = byKey.values().next().value as KnownLayout;
      byKey.delete(old.key);
      byId.delete(old.id);
      old.forgotten = true;
      old.dueAt = 0;
    }
  };

  const layouts: Omit<Layouts, 'size'> & Keyed = {
    [BY_KEY]: byKey,
    of(namespace, policies) {
      let layout = policies === lastPolicies ? last : cached.get(policies);
      if (layout === undefined || layout.namespace !== namespace) {
        const key = `${namespace}\n${policies.map((p) => `${p.slot} ${p.version}`).join('\n')}`;
        layout = byKey.get(key) ?? {
          id: nextId++,
          namespace,
          policies,
          length: segmentLength(policies),
          logs: policies.some((p) => p.algorithm === 'sliding-window-log'),
          forgotten: false,
          dueAt: 0,
          key,
        };
        file(layout);
        cached.set(policies, layout);
      } else if (stale(layout)) {
        file(layout);
        // Replaced by another limiter's layout of these policies while forgotten: use that one.
        if (layout.forgotten) {
          layout = byKey.get(layout.key) as KnownLayout;
          cached.set(policies, layout);
        }
      }
      lastPolicies = policies;
      last = layout;
      return layout;
    },
    stale,
    byId: (id) => byId.get(id),
  };
  return withGetters(layouts, layoutsGetters);
}
