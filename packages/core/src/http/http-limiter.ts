import type { IncomingMessage, ServerResponse } from 'node:http';
import { consumeNow, createLimiter } from '../limiter.js';
import type { Decision, Limiter, LimiterOptions, RateLimitStore } from '../types.js';
import { clientAddressKey, type ProxyTrust } from './client-address.js';
import { warnIfCreatedInRequest } from './created-in-request.js';
import { retryAfterMs } from './headers/effective-window.js';
import { createHeaderWriter, type HeaderTarget, type HeaderWriter } from './headers/index.js';
import { hold } from './hold.js';
import { checkHttpOptions, type HttpLimiterOptions, type PoliciesFor } from './http-options.js';
import { createRulesHttpLimiter } from './rules/rules-http-limiter.js';
import { isRulesMode, type RulesHttpOptions } from './rules/rules-options.js';
import { sfSeconds } from './structured-fields.js';
import { createTierLimiters } from './tier-limiters.js';
import { costFromUser, keyFromUser, tierFromUser } from './user-functions.js';
import { createWarnOnce } from './warnings.js';

/** What an adapter tells the shared core about its framework. Created once per adapter. */
export interface AdapterBinding<Req, Res> extends HeaderTarget<Res> {
  /** Node's request behind the framework's. */
  rawRequest(req: Req): IncomingMessage;
  /** Node's response behind the framework's. */
  rawResponse(res: Res): ServerResponse;
  /** The client address as the framework resolved it under its own trust-proxy setting. */
  clientIp(req: Req): string | undefined;
  proxyTrust(req: Req): ProxyTrust;
  /** How to set proxy trust in this framework, quoted by the proxy warnings. */
  trustAdvice: string;
  /** The store when none is given: each middleware gets its own. */
  defaultStore(): RateLimitStore;
  /** The route pattern the framework matched (`/users/:id`), for rules' `route` descriptor. */
  routePattern?(req: Req): string | undefined;
  /** A stack frame of the framework dispatching a request: a limiter created under one warns. */
  dispatchFrame?: RegExp;
}

/**
 * - `next`: go on (`decision` is undefined when `skip` matched or this limiter already
 *   counted the request);
 * - `limited`: refused; headers and `Retry-After` are set, the adapter sends the response
 *   (`problemJson(decision)`) or calls the user's `onLimited`;
 * - `gone`: the client left while its queued request was held; send nothing.
 */
export type Outcome =
  | { readonly action: 'next'; readonly decision: Decision | undefined }
  | { readonly action: 'limited'; readonly decision: Decision }
  | { readonly action: 'gone'; readonly decision: Decision };

export interface HttpLimiter<Req, Res> {
  /**
   * An outcome at once when nothing needs waiting for (an in-process store, no async `key`,
   * `cost`, `skip` or tier function, no queue hold), else a promise of one. Adapters take
   * both, so the common case costs no promise.
   */
  handle(req: Req, res: Res): Outcome | Promise<Outcome>;
}

interface Entry {
  limiter: Limiter;
  headers: HeaderWriter;
}

function tierResolver<Req>(
  policiesFor: PoliciesFor<Req> | undefined,
  base: Record<string, unknown>,
  wrap: (limiter: Limiter) => Entry,
): ((req: Req) => Promise<Entry>) | undefined {
  if (policiesFor === undefined) return undefined;
  const entryFor = createTierLimiters(base, wrap);
  return async (req) => tierFromUser(await policiesFor(req), entryFor);
}

const SKIPPED: Outcome = Object.freeze({ action: 'next', decision: undefined });
const ignore = (): void => {};

/**
 * The one implementation of the HTTP semantics behind every adapter (SPEC §5): options are
 * validated here at construction, then per request it resolves the policies (per tier when
 * `policies` is a function), the key and the cost, asks the limiter, writes the headers, and
 * holds a queued request. Store failures surface as the limiter's `onStoreError` decides; with
 * `'throw'` the returned promise rejects and the adapter hands the error to its framework.
 */
export function createHttpLimiter<Req, Res>(
  options: HttpLimiterOptions<Req> | RulesHttpOptions<Req>,
  binding: AdapterBinding<Req, Res>,
  extraOptionNames: readonly string[] = [],
): HttpLimiter<Req, Res> {
  if (isRulesMode(options)) return createRulesHttpLimiter(options, binding, extraOptionNames);
  const checked = checkHttpOptions<Req>(options, extraOptionNames);
  const { key, skip, ipv6Subnet, policiesFor } = checked;
  const base: Record<string, unknown> = {
    ...checked.limiterOptions,
    store: checked.limiterOptions.store === undefined ? binding.defaultStore() : checked.limiterOptions.store,
  };
  const clock = (base.clock as (() => number) | undefined) ?? Date.now;
  const warn = createWarnOnce((base.logger as LimiterOptions['logger']) ?? console);
  const wrap = (limiter: Limiter): Entry => ({
    limiter,
    headers: createHeaderWriter(limiter.policies, checked.headers, clock),
  });
  // The common case (fixed policies, fixed cost) awaits nothing but the store.
  const tierOf = tierResolver(policiesFor, base, wrap);
  const fixedEntry = tierOf === undefined ? wrap(createLimiter(base as unknown as LimiterOptions)) : undefined;
  const { cost } = checked;
  const fixedUnits = typeof cost === 'number' ? { cost } : undefined;

  const keyOf = (req: Req, request: IncomingMessage): string =>
    clientAddressKey(binding.clientIp(req), binding.proxyTrust(req), binding.trustAdvice, request, ipv6Subnet, warn);

  /** Headers, then the outcome: at once, or after the queue hold. */
  const finish = (
    entry: Entry,
    decision: Decision,
    res: Res,
    request: IncomingMessage,
    clientKey: string,
    units: number,
  ): Outcome | Promise<Outcome> => {
    entry.headers.write(decision, res, binding, request);
    if (!decision.allowed) {
      const waitMs = retryAfterMs(decision);
      if (waitMs !== undefined) binding.setHeader(res, 'Retry-After', sfSeconds(waitMs));
      return { action: 'limited', decision };
    }
    if (decision.delayMs === 0) return { action: 'next', decision };
    return hold(binding.rawResponse(res), decision.delayMs, entry.limiter.namespace).then((heldToTheEnd): Outcome => {
      if (heldToTheEnd) return { action: 'next', decision };
      // The reserved slot was never used: give it back to the queue.
      entry.limiter.refund(clientKey, units).catch(ignore);
      return { action: 'gone', decision };
    });
  };

  const general = async (req: Req, res: Res, request: IncomingMessage): Promise<Outcome> => {
    if (skip !== undefined && (await skip(req))) return SKIPPED;
    const entry = tierOf === undefined ? (fixedEntry as Entry) : await tierOf(req);
    const clientKey = key === undefined ? keyOf(req, request) : keyFromUser(await key(req));
    const units = typeof cost === 'number' ? cost : costFromUser(await cost(req));
    const decision = await entry.limiter.consume(clientKey, { cost: units });
    return finish(entry, decision, res, request, clientKey, units);
  };

  // Fixed policies, the default key and a fixed cost: nothing to await but, perhaps, the store.
  const simple = fixedEntry !== undefined && skip === undefined && key === undefined && fixedUnits !== undefined;

  // Requests this limiter has seen: one mounted twice on a request's way (`app.use(limit)` and
  // `router.use(limit)`) counts it once; the second pass goes on and keeps the first decision.
  const seen = new WeakSet<IncomingMessage>();
  warnIfCreatedInRequest(binding.dispatchFrame, (base.logger as LimiterOptions['logger']) ?? console);

  return {
    handle(req, res) {
      const request = binding.rawRequest(req);
      if (seen.has(request)) return SKIPPED;
      seen.add(request);
      if (!simple) return general(req, res, request);
      const entry = fixedEntry as Entry;
      const units = (fixedUnits as { cost: number }).cost;
      const clientKey = keyOf(req, request);
      const decision = consumeNow(entry.limiter, clientKey, units);
      if (decision !== undefined) return finish(entry, decision, res, request, clientKey, units);
      return entry.limiter
        .consume(clientKey, fixedUnits)
        .then((asked) => finish(entry, asked, res, request, clientKey, units));
    },
  };
}
