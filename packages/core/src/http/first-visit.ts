import type { Decision } from '../types.js';

/**
 * What sluice keeps for a request of a framework that gives each request a prototype of its
 * own (Express): the limiters that met it, and the last decision made for it
 * (`req.rateLimit`). One record a request, in one WeakMap: each entry of a weak collection
 * costs the collector work on every request, and two (the limiters met, the decision) cost
 * twice that.
 */
interface Visit {
  /** The limiter that met the request (its token), the limiters in the order met, or none yet. */
  met: object | object[] | undefined;
  decision: Decision | undefined;
  /** See `RequestWaits`; 0 for none. */
  spentMs: number;
}
const visits = new WeakMap<object, Visit>();

/**
 * Tells whether a limiter meets a request for the first time, so that one mounted twice on a
 * request's way (`app.use(limit)` and `router.use(limit)`) counts it once. It marks the request
 * with a symbol of the limiter's own rather than keeping a WeakSet: adding to a WeakSet on every
 * request cost more than the decision itself, mostly in the collector's work on its table.
 *
 * Not so where the framework gives each request a prototype of its own (`swapsPrototype`;
 * Express does): V8 then shares no hidden class between requests, so a property added to one
 * builds a new hidden class and sends every later property read on the request, the
 * framework's own included, to a slow lookup. There the request's `Visit` says it, in the
 * WeakMap that also keeps its decision.
 */
export function createFirstVisit(swapsPrototype = false): (request: object) => boolean {
  if (swapsPrototype) {
    const token = {};
    return (request) => {
      const visit = visits.get(request);
      if (visit !== undefined) return meets(visit, token);
      visits.set(request, { met: token, decision: undefined, spentMs: 0 });
      return true;
    };
  }
  const mark = Symbol('sluice.seen');
  return (request) => {
    const marked = request as Record<symbol, true>;
    if (marked[mark] === true) return false;
    marked[mark] = true;
    return true;
  };
}

/** Whether the limiter of `token` meets the visit's request for the first time; notes that it has. */
function meets(visit: Visit, token: object): boolean {
  const { met } = visit;
  if (met === token) return false;
  if (met === undefined) visit.met = token;
  else if (!Array.isArray(met)) visit.met = [met, token];
  else if (met.includes(token)) return false;
  else met.push(token);
  return true;
}

/**
 * The decision kept for a request of a framework that swaps request prototypes: Express's
 * `req.rateLimit`, read through an accessor (see `@sluice/express`).
 */
export const keptDecision = (request: object): Decision | undefined => visits.get(request)?.decision;

/** Keeps `decision` as the request's, for `keptDecision`. */
export function keepDecision(request: object, decision: Decision | undefined): void {
  const visit = visits.get(request);
  if (visit === undefined) visits.set(request, { met: undefined, decision, spentMs: 0 });
  else visit.decision = decision;
}

/**
 * The longest wait among the policies with no quota left that the limiters a request passed
 * reported on it: a refusal further on must not send the client back before they are restored.
 * Kept as the limiters' marks are (see `createFirstVisit`): on the request under a symbol, or in
 * its `Visit` where the framework swaps request prototypes. A WeakMap of its own cost each
 * refusal a look-up (some 80 instructions).
 */
export interface RequestWaits {
  /** Notes `waitMs` for `request`, unless a longer one is noted already. */
  note(request: object, waitMs: number): void;
  /** The wait noted for `request`; 0 for none. */
  of(request: object): number;
}

const SPENT = Symbol('sluice.spent');

export function createRequestWaits(swapsPrototype = false): RequestWaits {
  if (swapsPrototype) {
    return {
      note(request, waitMs) {
        const visit = visits.get(request);
        if (visit === undefined) visits.set(request, { met: undefined, decision: undefined, spentMs: waitMs });
        else if (waitMs > visit.spentMs) visit.spentMs = waitMs;
      },
      of: (request) => visits.get(request)?.spentMs ?? 0,
    };
  }
  return {
    note(request, waitMs) {
      const marked = request as Record<symbol, number | undefined>;
      if (waitMs > (marked[SPENT] ?? 0)) marked[SPENT] = waitMs;
    },
    of: (request) => (request as Record<symbol, number | undefined>)[SPENT] ?? 0,
  };
}
