import type Koa from 'koa';
import type { Context } from 'koa';

/** A value no real address takes, set through Koa's `ip` setter to find where Koa keeps it. */
const PROBE = 'sluice-probe';

/** What Koa's `ip` getter reads; an app that redefines any of them is read through `ctx.ip`. */
const ADDRESS_MEMBERS = ['ip', 'ips', 'socket'];

/**
 * `ctx.ip` for an app that trusts no proxy, read without Koa's getter where that gives the
 * same answer. Koa's getter looks `X-Forwarded-For` up in Node's headers even with `app.proxy`
 * off, only to drop it, by a name it lowercases afresh on every call: some 1,700 instructions
 * of a whole Koa server's request. With no proxy trusted, Koa's answer is the address a
 * middleware set (`ctx.request.ip = …`, which Koa keeps under a symbol of its own) or else the
 * socket's, and that is what is read here. The symbol is found once per app, through Koa's own
 * setter; an app that redefines `ip`, `ips` or `socket` on its `request` (or `ip` on its
 * `context`) before its first request, or a Koa that keeps the address some other way, is read
 * through `ctx.ip`.
 */
export function createClientIp(): (ctx: Context) => string {
  const symbols = new WeakMap<Koa, symbol | null>();
  // Most processes run one app: the last one's answer spares the WeakMap look-up.
  let lastApp: Koa | undefined;
  let lastSymbol: symbol | null = null;
  return (ctx) => {
    const { app } = ctx;
    if (app !== lastApp) {
      let symbol = symbols.get(app);
      if (symbol === undefined) {
        symbol = addressSymbolOf(app) ?? null;
        symbols.set(app, symbol);
      }
      lastApp = app;
      lastSymbol = symbol;
    }
    if (lastSymbol === null) return ctx.ip;
    const set = (ctx.request as unknown as Record<symbol, string | undefined>)[lastSymbol];
    return set || ctx.req.socket?.remoteAddress || '';
  };
}

/**
 * The symbol Koa's `ip` setter stores under, for an app whose address members are Koa's own;
 * else `undefined`. Never throws: a Koa that does not behave as probed is read through `ctx.ip`.
 */
export function addressSymbolOf(app: Koa): symbol | undefined {
  try {
    if (ADDRESS_MEMBERS.some((name) => Object.hasOwn(app.request, name)) || Object.hasOwn(app.context, 'ip'))
      return undefined;
    const koaRequest = Object.getPrototypeOf(app.request) as object | null;
    if (koaRequest === null || !Object.hasOwn(koaRequest, 'ip')) return undefined;
    const probe = Object.create(koaRequest) as { ip: string };
    probe.ip = PROBE;
    const symbols = Object.getOwnPropertySymbols(probe);
    const symbol = symbols[0];
    if (symbols.length !== 1 || symbol === undefined) return undefined;
    const kept = (probe as unknown as Record<symbol, unknown>)[symbol];
    return kept === PROBE && probe.ip === PROBE ? symbol : undefined;
  } catch {
    return undefined;
  }
}
