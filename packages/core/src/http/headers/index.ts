import { invalid } from '../../errors.js';
import { checkKnownOptions, NO_PEER_NAMES } from '../../known-options.js';
import type { Decision, Policy } from '../../types.js';
import type { WarnOnce } from '../warnings.js';
import { draft6Fields } from './draft-6.js';
import { draft7PolicyField, draft7RateLimitField } from './draft-7.js';
import { draft11ItemHeads, draft11PolicyField, draft11RateLimitField } from './draft-11.js';
import { type Headline, headlineOf, isMoreRestrictive } from './effective-window.js';
import { legacyFields } from './legacy.js';
import { createNameCheck } from './policy-name-check.js';

export type StandardHeaders = 'draft-11' | 'draft-7' | 'draft-6';

export interface HeadersOptions {
  /** Which IETF draft to speak, or `false` for none. @default 'draft-11' */
  standard?: StandardHeaders | false | undefined;
  /** Also send `X-RateLimit-Limit/Remaining/Reset`. @default false */
  legacy?: boolean | undefined;
}

export interface ResolvedHeaders {
  standard: StandardHeaders | false;
  legacy: boolean;
}

/** How an adapter writes a response header; `append` adds a List member, `set` replaces. */
export interface HeaderTarget<Res> {
  setHeader(res: Res, name: string, value: string): void;
  appendHeader(res: Res, name: string, value: string): void;
}

/**
 * The name to look a field `appendHeader` is given up by in Node's response (`getHeader`,
 * `hasHeader`): `RateLimit` and `RateLimit-Policy`, the names sluice appends, lowercased as
 * constants; any other name as it is. Node lowercases a name on every look-up, which costs a
 * new string and then a string-table search to use it as a key (655 instructions a look-up in
 * a loop under callgrind), where a name already lowercase comes back as it is. Setting keeps
 * the name as given: it is what is sent. For adapters.
 *
 * @internal
 */
export function lookupName(name: string): string {
  if (name === 'RateLimit') return 'ratelimit';
  if (name === 'RateLimit-Policy') return 'ratelimit-policy';
  return name;
}

const standards: readonly unknown[] = ['draft-11', 'draft-7', 'draft-6', false];

/**
 * The drafts the middleware of this process speak. Two drafts cannot share one `RateLimit`
 * field (draft-7's is a Dictionary, draft-11's a List), so once a second one is configured each
 * request records the draft that wrote on it first (`draftOnRequest`); until then, as in most
 * apps, writing costs no look-up.
 */
const draftsInUse = new Set<StandardHeaders>();
let mixedDrafts = false;
const draftOnRequest = new WeakMap<object, StandardHeaders>();

/** Validates `headers`; called once per middleware, so it also notes the draft for `draftsInUse`. */
export function checkHeaders(value: unknown): ResolvedHeaders {
  const checked = checkedHeaders(value);
  if (checked.standard !== false) {
    draftsInUse.add(checked.standard);
    mixedDrafts = draftsInUse.size > 1;
  }
  return checked;
}

function checkedHeaders(value: unknown): ResolvedHeaders {
  if (value === undefined) return { standard: 'draft-11', legacy: false };
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    invalid(
      'ERR_SLUICE_INVALID_HEADERS',
      'headers',
      value,
      "an object such as `{ standard: 'draft-11', legacy: false }`",
    );
  }
  checkKnownOptions(value, ['standard', 'legacy'], NO_PEER_NAMES, 'headers');
  const { standard = 'draft-11', legacy = false } = value as HeadersOptions;
  if (!standards.includes(standard)) {
    invalid(
      'ERR_SLUICE_INVALID_HEADERS',
      'headers.standard',
      standard,
      "'draft-11', 'draft-7', 'draft-6' or false (drafts 8 to 10 share draft-11's wire format: use 'draft-11')",
    );
  }
  if (typeof legacy !== 'boolean') invalid('ERR_SLUICE_INVALID_HEADERS', 'headers.legacy', legacy, 'true or false');
  return { standard, legacy };
}

/** The fields that carry one set of headline figures: each is written whole, by one limiter. */
type HeadlineFields = 'draft-7' | 'draft-6' | 'legacy';

/**
 * Headline figures already sent on a request, per kind of field, so a second limiter only
 * replaces them with stricter ones, and still writes a kind no limiter before it wrote.
 */
const headlines: Record<HeadlineFields, WeakMap<object, Headline>> = {
  'draft-7': new WeakMap(),
  'draft-6': new WeakMap(),
  legacy: new WeakMap(),
};

/** Whether `headline` goes into `fields` on `request`: none were sent there yet, or it is stricter; notes it if so. */
function replaces(fields: HeadlineFields, request: object, headline: Headline): boolean {
  const sent = headlines[fields].get(request);
  if (sent !== undefined && !isMoreRestrictive(headline, sent)) return false;
  headlines[fields].set(request, headline);
  return true;
}

export interface HeaderWriter {
  /**
   * Writes the fields describing `decision`. `request` identifies the HTTP request across
   * limiters (the Node `IncomingMessage`), so that several limiters compose.
   */
  write<Res>(decision: Decision, res: Res, target: HeaderTarget<Res>, request: object): void;
}

/**
 * Serialises once what never changes for a limiter (its policy field, its quoted names).
 * `warn` reports a request on which another limiter wrote another draft first.
 */
export function createHeaderWriter(
  policies: readonly Policy[],
  options: ResolvedHeaders,
  clock: () => number,
  warn?: WarnOnce,
): HeaderWriter {
  const { standard, legacy } = options;
  const policyField =
    standard === 'draft-11' ? draft11PolicyField(policies) : standard ? draft7PolicyField(policies) : undefined;
  const names = policies.map((p) => p.name);
  const itemHeads = draft11ItemHeads(policies);
  const hasHeadline = legacy || standard === 'draft-7' || standard === 'draft-6';
  const checkNames = standard === 'draft-11' ? createNameCheck(names, warn) : undefined;

  /**
   * Whether this limiter's draft may write on the request: the first draft written keeps the
   * fields, since mixing two would replace the other's items or leave a field no parser reads.
   */
  const speaksOn = (request: object): boolean => {
    if (standard === false) return true;
    const first = draftOnRequest.get(request);
    if (first === undefined) draftOnRequest.set(request, standard);
    else if (first !== standard) {
      warn?.(
        'WRN_SLUICE_MIXED_HEADER_DRAFTS',
        `this limiter speaks ${standard} but another limiter wrote ${first} fields on the request first; one response carries one draft's RateLimit fields, so this limiter's are left out. Give every limiter the same \`headers.standard\`.`,
      );
      return false;
    }
    return true;
  };

  return {
    write(decision, res, target, request) {
      // A store that did not decide gave no figures; inventing some would mislead clients.
      if (decision.reason === 'store-unavailable') return;
      const speaks = !mixedDrafts || speaksOn(request);
      if (speaks && policyField !== undefined) target.appendHeader(res, 'RateLimit-Policy', policyField);
      if (speaks && standard === 'draft-11') {
        target.appendHeader(res, 'RateLimit', draft11RateLimitField(decision, itemHeads));
        checkNames?.(request);
      }
      if (!hasHeadline) return;
      const headline = headlineOf(decision, policies);
      if (speaks && standard === 'draft-7' && replaces('draft-7', request, headline))
        target.setHeader(res, 'RateLimit', draft7RateLimitField(headline));
      if (speaks && standard === 'draft-6' && replaces('draft-6', request, headline))
        for (const [name, value] of draft6Fields(headline)) target.setHeader(res, name, value);
      if (legacy && replaces('legacy', request, headline))
        for (const [name, value] of legacyFields(headline, clock())) target.setHeader(res, name, value);
    },
  };
}
