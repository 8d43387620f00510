import type { PolicyOptions, Throttle } from '@sluice/core';
import type { Location } from './reader.js';

export type { Location } from './reader.js';

/** envoyproxy/ratelimit's units, as written (lower case). */
export type RateLimitUnit = 'second' | 'minute' | 'hour' | 'day' | 'week' | 'month' | 'year';

/** One entry of a request's descriptor, as in Envoy's `RateLimitDescriptor.Entry`. */
export interface DescriptorEntry {
  readonly key: string;
  readonly value: string;
}

/** A request's descriptor: entries matched level by level against the rules' tree. */
export type Descriptor = readonly DescriptorEntry[];

/** One level of a rule's place in the tree: `value` is absent for a bare key (a counter per value). */
export interface RulePathEntry {
  readonly key: string;
  readonly value?: string;
}

/** A descriptor of the document that carries a limit (`rate_limit` or `policies`). Immutable. */
export interface Rule {
  /**
   * Stable id from the domain and the descriptor's path, never from its limits: use it as the
   * limiter's `prefix`, so a reload that changes a limit, window or algorithm keeps what every
   * client has spent.
   */
  readonly id: string;
  readonly domain: string;
  readonly path: readonly RulePathEntry[];
  /** `rate_limit.name` as written; what `replaces` refers to. */
  readonly name: string | undefined;
  /** Core policy options with every name set; empty when `unlimited` or `blocked`. */
  readonly policies: readonly PolicyOptions[];
  /** `throttle`, or `{ mode: 'shadow' }` for `shadow_mode: true`. */
  readonly throttle: Throttle | undefined;
  readonly unlimited: boolean;
  /** `requests_per_unit: 0`: every request is over the limit, and nothing is counted. */
  readonly blocked: boolean;
  readonly shadowMode: boolean;
  readonly quotaMode: boolean;
  readonly detailedMetric: boolean;
  readonly valueToMetric: boolean;
  readonly shareThreshold: boolean;
  /** Names of rules this one replaces when both match one request. */
  readonly replaces: readonly string[];
  /** The envoyproxy/ratelimit limit as written, for answering on Envoy's wire. */
  readonly rateLimit:
    | { readonly unit: RateLimitUnit; readonly requestsPerUnit: number; readonly windowMs: number }
    | undefined;
  /** Free-form `metadata`, as written. */
  readonly metadata: unknown;
  readonly location: Location;
}

/** A rule matched by one request descriptor. */
export interface RuleMatch {
  readonly rule: Rule;
  /**
   * The client key to count under, within the rule's namespace (`rule.id`): the request's
   * values at the levels that count per value (a bare key, or a wildcard without
   * `share_threshold`), length-prefixed so no two lists of values give one key; `'*'` when
   * every level is an exact value.
   */
  readonly key: string;
}

/** An immutable, validated set of rules, compiled for matching. */
export interface RuleSet {
  readonly domains: readonly string[];
  /** Every rule in document order. */
  readonly rules: readonly Rule[];
  /** The files (or `source` names) the set was built from. */
  readonly sources: readonly string[];
  /**
   * envoyproxy/ratelimit's matching: one result per descriptor, in order (`undefined` where
   * no rule applies), after `replaces` drops the rules another match replaces.
   */
  match(domain: string, descriptors: readonly Descriptor[]): (RuleMatch | undefined)[];
  /** The rule one descriptor matches, without `replaces` (which needs the whole request). */
  matchOne(domain: string, descriptor: Descriptor): RuleMatch | undefined;
}
