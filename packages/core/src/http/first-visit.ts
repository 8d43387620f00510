/**
 * Tells whether a limiter meets a request for the first time, so that one mounted twice on a
 * request's way (`app.use(limit)` and `router.use(limit)`) counts it once. It marks the request
 * with a symbol of the limiter's own rather than keeping a WeakSet: adding to a WeakSet on every
 * request cost more than the decision itself, mostly in the collector's work on its table.
 *
 * Not so where the framework gives each request a prototype of its own (`swapsPrototype`;
 * Express does): V8 then shares no hidden class between requests, so a property added to one
 * builds a new hidden class and sends every later property read on the request, the
 * framework's own included, to a slow lookup. There the WeakSet costs less.
 */
export function createFirstVisit(swapsPrototype = false): (request: object) => boolean {
  if (swapsPrototype) {
    const seen = new WeakSet<object>();
    return (request) => {
      if (seen.has(request)) return false;
      seen.add(request);
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
