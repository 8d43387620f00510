import { createLimiter, type Decision, type RateLimitStore } from '@sluice/core';
import { createMemoryStore } from '@sluice/memory';
import express, { type Express } from 'express';

/**
 * After: docs/migrating/rate-limiter-flexible.md. A framework-agnostic limiter used by hand,
 * as rate-limiter-flexible's users do: consume with a cost, peek, refund (`reward`), reset
 * (`delete`). sluice resolves with a decision instead of rejecting, and a refusal spends
 * nothing.
 */
export function createApp(options: { clock?: () => number; store?: RateLimitStore } = {}): Express {
  // Was: new RateLimiterMemory({ keyPrefix: 'api', points: 10, duration: 1 })
  // (RateLimiterRedis's `storeClient: redis` is `store: createRedisStore({ client: redis })`)
  // A fixed window, as rate-limiter-flexible counts (sluice's default is the sliding counter).
  const limiter = createLimiter({
    prefix: 'api',
    limit: 10,
    window: '1s',
    algorithm: 'fixed-window',
    store: options.store ?? createMemoryStore(),
    ...(options.clock === undefined ? {} : { clock: options.clock }),
  });

  const app = express();
  const send429 = (res: express.Response, decision: Decision) => {
    // Infinity when the cost could never pass: no wait would help.
    if (Number.isFinite(decision.retryAfterMs)) res.set('Retry-After', String(Math.ceil(decision.retryAfterMs / 1000)));
    res.status(429).json({ error: 'Too Many Requests' });
  };

  app.get('/export', async (req, res) => {
    // Was: try { await limiter.consume(req.ip, 5) } catch (rlRes) { … rlRes.msBeforeNext … }
    const decision = await limiter.consume(req.ip ?? '', { cost: 5 });
    if (!decision.allowed) send429(res, decision);
    else res.json({ remainingPoints: decision.remaining });
  });
  app.get('/quota', async (req, res) => {
    // Was: await limiter.get(req.ip)
    const decision = await limiter.peek(req.ip ?? '');
    res.json({ remainingPoints: decision.remaining, msBeforeNext: decision.resetAfterMs });
  });
  app.post('/refund', async (req, res) => {
    // Was: await limiter.reward(req.ip, 5)
    await limiter.refund(req.ip ?? '', 5);
    res.sendStatus(204);
  });
  app.delete('/quota', async (req, res) => {
    // Was: await limiter.delete(req.ip)
    await limiter.reset(req.ip ?? '');
    res.sendStatus(204);
  });
  return app;
}
