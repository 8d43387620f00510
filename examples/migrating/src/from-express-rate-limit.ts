import { ipKey, rateLimit } from '@sluice/express';
import express, { type Express } from 'express';

/**
 * After: docs/migrating/express-rate-limit.md. An API limit that does not charge for failed
 * requests, a login limit that only failed attempts use up (cleared by a good password), and
 * a plain-text refusal.
 */
export function createApp(options: { clock?: () => number } = {}): Express {
  const app = express();

  // Was: rateLimit({ windowMs: 15 * 60 * 1000, limit: 100, standardHeaders: 'draft-8',
  //   legacyHeaders: false, message: 'Too many requests, please try again later.',
  //   skipFailedRequests: true })
  const api = rateLimit({
    window: '15m',
    limit: 100,
    message: 'Too many requests, please try again later.',
    skipFailedRequests: true,
    ...options,
  });

  // Was: rateLimit({ windowMs: 60 * 60 * 1000, limit: 5, skipSuccessfulRequests: true,
  //   keyGenerator: (req) => typeof req.query.user === 'string' ? `user:${req.query.user}`
  //     : `ip:${ipKeyGenerator(req.ip)}` })
  const login = rateLimit({
    window: '1h',
    limit: 5,
    skipSuccessfulRequests: true,
    key: (req) => (typeof req.query.user === 'string' ? `user:${req.query.user}` : `ip:${ipKey(req.ip) ?? ''}`),
    ...options,
  });

  app.use('/api', api);
  app.get('/api/items', (_req, res) => {
    res.json({ items: [] });
  });
  app.get('/api/missing', (_req, res) => {
    res.status(404).json({ error: 'not found' });
  });
  app.post('/login', login, async (req, res) => {
    if (req.query.password !== 'secret') {
      res.status(401).json({ error: 'wrong password', attemptsLeft: req.rateLimit?.remaining });
      return;
    }
    // Was: login.resetKey(`user:${req.query.user}`). The limiter is the one the middleware counts in.
    await login.limiter?.reset(req.rateLimit?.key ?? '');
    res.json({ ok: true });
  });
  return app;
}
