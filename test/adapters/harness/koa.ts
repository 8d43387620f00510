import type { Decision } from '@sluice/core';
import { type RateLimitOptions, rateLimit } from '@sluice/koa';
import Koa, { type Context } from 'koa';
import { listen } from './listen.js';
import type { Harness } from './types.js';

const asOptions = (options: Record<string, unknown>) => options as unknown as RateLimitOptions;

export const koaHarness: Harness = {
  name: 'koa',
  async start(spec) {
    const app = new Koa();
    app.silent = true;
    const errors: unknown[] = [];
    app.on('error', (error: unknown) => errors.push(error));
    if (spec.trust !== undefined && spec.trust !== 'none') app.proxy = true;
    if (spec.trust === 'loopback') app.maxIpsCount = 1;
    let hits = 0;
    const limits = (spec.limits ?? []).map((options) => rateLimit(asOptions(options)));
    for (const limit of limits) {
      app.use(limit);
      if (spec.mountTwice) app.use(limit);
    }
    // Koa has no router of its own: a per-route limit is a middleware guarded by the path.
    for (const [path, options] of Object.entries(spec.routeLimits ?? {})) {
      const limit = rateLimit(asOptions(options));
      app.use((ctx, next) => (ctx.path === path ? limit(ctx, next) : next()));
    }
    const paths = new Set(['/', '/other', ...Object.keys(spec.routeLimits ?? {})]);
    app.use((ctx) => {
      if (ctx.method !== 'GET') return undefined;
      if (ctx.path === '/hang') {
        hits++;
        return new Promise(() => {});
      }
      if (!paths.has(ctx.path)) return undefined;
      hits++;
      ctx.status = Number(ctx.get('x-status') || 200);
      ctx.body = { decision: ctx.state.rateLimit ?? null };
      return undefined;
    });
    return listen(
      app.callback(),
      () => hits,
      () => errors,
      limits[0],
    );
  },
  header: (req, name) => (req as Context).get(name) || undefined,
  teapot: () => (ctx: Context, decision: Decision) => {
    ctx.status = 418;
    ctx.body = { custom: true, violated: decision.policies.filter((p) => !p.allowed).map((p) => p.name) };
  },
  async configure(options) {
    rateLimit(asOptions(options));
  },
};
