/**
 * Tells whether a limiter meets a request for the first time, so that one mounted twice on a
 * request's way (`app.use(limit)` and `router.use(limit)`) counts it once. It marks the request
 * with a symbol of the limiter's own rather than keeping a WeakSet: adding to a WeakSet on every
 * request cost more than the decision itself, mostly in the collector's work on its table.
 */
export function createFirstVisit(): (request: object) => boolean {
  const mark = Symbol('sluice.seen');
  return (request) => {
    const marked = request as Record<symbol, true>;
    if (marked[mark] === true) return false;
    marked[mark] = true;
    return true;
  };
}
