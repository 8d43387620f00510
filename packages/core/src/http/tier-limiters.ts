import { fittedRoot, shortHash } from '../derived-namespace.js';
import { SluiceError } from '../errors.js';
import { createLimiter, releaseNamespace } from '../limiter.js';
import { toPolicies } from '../policy.js';
import type { Limiter, LimiterOptions, PolicyOptions } from '../types.js';

/** Distinct policy sets kept at once; beyond it the least recently used limiter object is dropped. */
export const MAX_TIER_LIMITERS = 1024;

/**
 * One limiter per distinct policy set returned by a `policies` function. A tier's namespace is
 * derived from the adapter's own root namespace and the names of the tier's policies, so it is
 * the same in every process and whatever order tiers are first seen in, and a dropped limiter
 * object loses no state: the store keeps it. Names, not figures: as for every limiter (SPEC
 * §4), a policy keeps its clients' counts when its limit, window or algorithm changes (a
 * rolling deploy, a tier's new quota), so tiers count apart when their policies are named
 * apart, and a client moved to a tier whose policies share names keeps what it used.
 *
 * A `limit` function's tiers (`oneCount`) are one policy whose limit varies by client, named by
 * its figures: they share one namespace, so a client whose limit changes (an upgrade, a new
 * quota) keeps what it used, as it would under a fixed limit that changed.
 *
 * The root is claimed at start-up with a placeholder limiter: that validates the shared
 * options at construction and keeps the namespace from any other limiter on the store.
 */
export function createTierLimiters<Entry>(
  base: Record<string, unknown>,
  wrap: (limiter: Limiter) => Entry,
  oneCount = false,
): { namespace: string; entryFor: (list: readonly PolicyOptions[]) => Entry; release: () => void } {
  const placeholder = createLimiter({
    ...base,
    policies: [{ name: 'tiers', limit: 1, window: 1000 }],
  } as unknown as LimiterOptions);
  const root = placeholder.namespace;
  const byIdentity = new WeakMap<object, Entry>();
  const byText = new Map<string, Entry>();

  const entryFor = (list: readonly PolicyOptions[]): Entry => {
    const known = byIdentity.get(list);
    if (known !== undefined) return known;
    const text = textOf(list);
    let entry = byText.get(text);
    if (entry === undefined) {
      const names = oneCount ? ['limit'] : toPolicies(list).map((policy) => policy.name);
      const prefix = `${fittedRoot(root, 51)}.${shortHash(JSON.stringify(names.sort()), 12)}`;
      entry = wrap(createLimiter({ ...base, policies: list, prefix } as unknown as LimiterOptions));
      if (byText.size >= MAX_TIER_LIMITERS) byText.delete(byText.keys().next().value as string);
    } else {
      byText.delete(text);
    }
    byText.set(text, entry);
    if (typeof list === 'object' && list !== null) byIdentity.set(list, entry);
    return entry;
  };
  // The tiers' own prefixes claim nothing (see `claimNamespace`): only the root's claim is held.
  return { namespace: root, entryFor, release: () => releaseNamespace(placeholder) };
}

/** A tier's policies as text, the key its limiter is kept by. A list JSON cannot write (a cycle, a BigInt) is no list of policy options. */
function textOf(list: readonly PolicyOptions[]): string {
  try {
    return JSON.stringify(list);
  } catch (error) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_POLICIES',
      `[sluice] Policies must be plain options, which these are not: ${(error as Error).message}.`,
      { cause: error },
    );
  }
}
