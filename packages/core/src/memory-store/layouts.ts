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
}

/**
 * Layouts known at once. Beyond it the one created (or looked up by a new limiter) longest ago
 * is forgotten: a segment of a forgotten layout reads as no state, as an evicted key does, and
 * is dropped when its client is next decided on. This bounds what per-request policy sets
 * (`policies(req)`) cost, however many distinct ones arrive.
 */
export const MAX_LAYOUTS = 4096;

export interface Layouts {
  /** The layout of a limiter's policies under its namespace; cached per policy list. */
  of(namespace: string, policies: readonly Policy[]): Layout;
  /** A known layout by id. */
  byId(id: number): Layout | undefined;
  readonly size: number;
}

export function createLayouts(max = MAX_LAYOUTS): Layouts {
  const byKey = new Map<string, Layout>();
  const byId = new Map<number, Layout>();
  const cached = new WeakMap<readonly Policy[], Layout>();
  let nextId = 0;
  // The last one asked for: most calls in a row come from one limiter.
  let lastPolicies: readonly Policy[] | undefined;
  let last: Layout | undefined;

  return {
    of(namespace, policies) {
      if (policies === lastPolicies && (last as Layout).namespace === namespace) return last as Layout;
      const known = cached.get(policies);
      if (known !== undefined && known.namespace === namespace) {
        lastPolicies = policies;
        last = known;
        return known;
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
        };
        byId.set(layout.id, layout);
        if (byKey.size >= max) {
          const [oldest, old] = byKey.entries().next().value as [string, Layout];
          byKey.delete(oldest);
          byId.delete(old.id);
        }
      } else {
        byKey.delete(key);
      }
      byKey.set(key, layout);
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
