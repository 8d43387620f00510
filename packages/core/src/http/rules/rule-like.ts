import type { PolicyOptions, Throttle } from '../../types.js';

/**
 * What the HTTP layer needs of a rule set. `@sluice/rules` provides it (`parseRules`,
 * `loadRules`, `watchRules`); core only describes its shape, since core cannot depend on it.
 */
export interface RuleLike {
  /** Stable across reloads while the rule stays in place: its limiters' namespace. */
  readonly id: string;
  readonly policies: readonly PolicyOptions[];
  readonly throttle: Throttle | undefined;
  /** Matched, but never limited. */
  readonly unlimited: boolean;
  /** Every request refused, none counted (`requests_per_unit: 0`). */
  readonly blocked: boolean;
  /** A `quota_mode` rule refuses a request only together with every other one it matched. */
  readonly quotaMode?: boolean;
  /** An envoyproxy/ratelimit limit's window: a blocked rule refuses until it ends. */
  readonly rateLimit: { readonly windowMs: number } | undefined;
}

export interface DescriptorEntryLike {
  readonly key: string;
  readonly value: string;
}

export interface RuleMatchLike {
  readonly rule: RuleLike;
  /** The client key within the rule's namespace. */
  readonly key: string;
  /**
   * Set when the request's path was read more than one way (as the router reads it, and as a
   * static file server or a router mounted at a path may) and not every reading matched this
   * rule: the readings that did, one bit each (bit 0 the path as sent). The request passes where
   * each reading passes alone.
   */
  readonly readings?: number;
}

/** A rule's place in the document: its domain and the descriptor entries leading to it. */
export interface RulePlaceLike {
  readonly domain: string;
  readonly path: readonly { readonly key: string; readonly value?: string }[];
}

export interface RuleSetLike {
  readonly domains: readonly string[];
  /** Every rule, for checks of the whole set (`@sluice/rules` lists them; a set without is not checked). */
  readonly rules?: readonly RulePlaceLike[];
  match(
    domain: string,
    descriptors: readonly (readonly DescriptorEntryLike[])[],
  ): readonly (RuleMatchLike | undefined)[];
}

/** A rule set, or a watcher whose `current` is the set in force. */
export type RulesOption = RuleSetLike | { readonly current: RuleSetLike };
