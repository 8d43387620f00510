import type { Policy } from '../types.js';
import { segmentLength } from './entry.js';

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
}

/**
 * Layouts known at once. Beyond it the one created (or looked up by a new limiter) longest ago
 * is forgotten: a segment of a forgotten layout reads as no state, as an evicted key does, and
 * is dropped when its client is next decided on. This bounds what per-request policy sets
 * (`policies(req)`) cost, however many distinct ones arrive. A limiter still in use keeps its
 * layout object, and its next decision brings the layout back under the same id, so what its
 * clients hold in the meantime is read again, not taken for fresh.
 */
export const MAX_LAYOUTS = 4096;

export interface Layouts {
  /** The layout of a limiter's policies under its namespace; cached per policy list. */
  of(namespace: string, policies: readonly Policy[]): Layout;
  /** A known layout by id. */
  byId(id: number): Layout | undefined;
  readonly size: number;
}

/** A layout as the table keeps it: its key in `byKey`. */
interface KnownLayout extends Layout {
  forgotten: boolean;
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

  /** Files the layout as the newest, forgetting the oldest beyond `max`. */
  const remember = (layout: KnownLayout): void => {
    layout.forgotten = false;
    byId.set(layout.id, layout);
    byKey.set(layout.key, layout);
    if (byKey.size > max) {
      const old = byKey.values().next().value as KnownLayout;
      byKey.delete(old.key);
      byId.delete(old.id);
      old.forgotten = true;
    }
  };

  return {
    of(namespace, policies) {
      const hit = policies === lastPolicies ? last : cached.get(policies);
      if (hit !== undefined && hit.namespace === namespace) {
        // Forgotten while its limiter was still in use: it comes back under its id.
        if (hit.forgotten) remember(hit);
        lastPolicies = policies;
        last = hit;
        return hit;
      }
      const key = `${namespace}\n${policies.map((p) => `${p.slot} ${p.version}`).join('\n')}`;
      let layout = byKey.get(key);
      if (layout === undefined) {
        layout = {
          id: nextId++,
          namespace,
          policies,
          length: segmentLength(policies),
          logs: policies.some((p) => p.algorithm === 'sliding-window-log'),
          forgotten: false,
          key,
        };
      } else {
        // A new limiter of known policies: filed again, as the newest.
        byKey.delete(key);
      }
      remember(layout);
      cached.set(policies, layout);
      lastPolicies = policies;
      last = layout;
      return layout;
    },
    byId: (id) => byId.get(id),
    get size() {
      return byKey.size;
    },
  };
}
