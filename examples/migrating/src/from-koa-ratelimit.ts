import { rateLimit } from '@sluice/koa';
import Koa from 'koa';

/**
 * After: docs/migrating/koa-ratelimit.md. The limit keyed by IP with an allow list, a ban in
 * place of a blacklist, koa-ratelimit's `X-RateLimit-*` fields kept for old clients, and its
 * error message.
 */
export function createApp(options: { clock?: () => number } = {}): Koa {
  const app = new Koa();
  app.silent = true;

  // Was: ratelimit({ driver: 'memory', db: new Map(), duration: 60_000, max: 3,
  //   id: (ctx) => ctx.ip, whitelist: (ctx) => ctx.get('x-internal') === '1',
  //   blacklist: (ctx) => banned.has(ctx.ip), errorMessage: 'Sometimes You Just Have to Slow Down.' })
  app.use(
    rateLimit({
      window: 60_000,
      limit: 3,
      key: (ctx) => ctx.ip,
      allowList: (ctx) => ctx.get('x-internal') === '1',
      ban: { after: 2, duration: '1h' },
      message: 'Sometimes You Just Have to Slow Down.',
      headers: { standard: 'draft-11', legacy: true },
      ...options,
    }),
  );
  app.use((ctx) => {
    ctx.body = { remaining: ctx.state.rateLimit?.remaining ?? null };
  });
  return app;
}
