import type { RedisClient } from './client.js';
import type { DenyCache } from './deny-cache.js';

/** How a store lays out its keys: exact mode's and local-first's never meet, whatever the prefix. */
export type KeyLayout = 'exact' | 'local-first';

/**
 * What the stores over one client, prefix and key layout share: they write the same keys, so
 * limiters claim namespaces per backing (by the object's identity), not per store object, and
 * a refund or reset through any of them reaches every deny cache that may hold the client.
 */
export interface Backing {
  /** Held weakly: a store dropped with its cache is not kept alive by its neighbours. */
  readonly denyCaches: Set<WeakRef<DenyCache>>;
  /** The set's size at which `keepDenyCache` next lets go of dropped caches. */
  sweepAt: number;
}

const FIRST_SWEEP = 16;

const backings = new WeakMap<RedisClient, Map<string, Backing>>();

/** One object per client, prefix and key layout. */
export function backingOf(client: RedisClient, prefix: string, layout: KeyLayout): Backing {
  const byPrefix = backings.get(client) ?? new Map<string, Backing>();
  backings.set(client, byPrefix);
  const name = `${layout}:${prefix}`;
  let backing = byPrefix.get(name);
  if (backing === undefined) {
    backing = { denyCaches: new Set(), sweepAt: FIRST_SWEEP };
    byPrefix.set(name, backing);
  }
  return backing;
}

/**
 * Holds a store's deny cache weakly among its backing's. The caches of dropped stores are let
 * go as new ones come, so a process that makes a store per request or per test holds no more
 * references than stores alive, where they were only ever let go at a refund or reset.
 */
export function keepDenyCache(backing: Backing, cache: DenyCache): void {
  const caches = backing.denyCaches;
  // Swept when the set has doubled since the last sweep: a few checks per store created.
  if (caches.size >= backing.sweepAt) {
    for (const held of caches) if (held.deref() === undefined) caches.delete(held);
    backing.sweepAt = Math.max(FIRST_SWEEP, 2 * caches.size);
  }
  caches.add(new WeakRef(cache));
}

/**
 * Forgets a client's refusals in the deny cache of every store over `backing`: a refund or
 * reset through one store object must not leave another answering from a refusal it undid.
 */
export function forgetEverywhere(backing: Backing, namespace: string, key: string): void {
  for (const held of backing.denyCaches) {
    const cache = held.deref();
    if (cache === undefined) backing.denyCaches.delete(held);
    else cache.forget(namespace, key);
  }
}
