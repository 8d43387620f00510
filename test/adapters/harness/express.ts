import type { Decision } from '@sluice/core';
import { type RateLimitOptions, rateLimit } from '@sluice/express';
import express, { type NextFunction, type Request, type Response } from 'express';
import { listen } from './listen.js';
import type { Harness } from './types.js';

const asOptions = (options: Record<string, unknown>) => options as unknown as RateLimitOptions;

export const expressHarness: Harness = {
  name: 'express',
  async start(spec) {
    const app = express();
    if (spec.trust === 'loopback') app.set('trust proxy', 'loopback');
    if (spec.trust === 'all') app.set('trust proxy', true);
    let hits = 0;
    const handler = (req: Request, res: Response) => {
      hits++;
      res.status(Number(req.get('x-status') ?? 200)).json({ decision: req.rateLimit ?? null });
    };
    const router = express.Router();
    const limits = (spec.limits ?? []).map((options) => rateLimit(asOptions(options)));
    for (const limit of limits) {
      app.use(limit);
      if (spec.mountTwice) router.use(limit);
    }
    app.use(router);
    for (const [path, options] of Object.entries(spec.routeLimits ?? {}))
      app.get(path, rateLimit(asOptions(options)), handler);
    app.get(['/', '/other'], handler);
    app.get('/hang', () => {
      hits++;
    });
    const errors: unknown[] = [];
    app.use((error: unknown, _req: Request, res: Response, next: NextFunction) => {
      errors.push(error);
      if (res.headersSent) next(error);
      else res.status(500).end();
    });
    return listen(
      app,
      () => hits,
      () => errors,
      limits[0],
    );
  },
  header: (req, name) => (req as Request).get(name),
  teapot: () => (_req: Request, res: Response, _next: unknown, decision: Decision) => {
    res.status(418).json({ custom: true, violated: decision.policies.filter((p) => !p.allowed).map((p) => p.name) });
  },
  async configure(options) {
    rateLimit(asOptions(options));
  },
};
