import { rateLimit } from '@sluice/express';
import { parseRules } from '@sluice/rules';
import express from 'express';
import request from 'supertest';
import { it } from 'vitest';
import { clockAt, collectingLogger } from './helpers.js';

const rules = parseRules(`
domain: api
descriptors:
  - key: path
    value: /api/login
    rate_limit: { unit: minute, requests_per_unit: 1 }
`);

// Express rewrites `req.url` while a mount handles the request: under `app.use('/api', …)` the
// path read `/login`, and a rule on `/api/login` matched nothing there, with no warning.
it.each([
  ['mounted at a path', (app: express.Express, limit: express.RequestHandler) => app.use('/api', limit)],
  [
    'in a router mounted at a path',
    (app: express.Express, limit: express.RequestHandler) => app.use('/api', express.Router().use(limit)),
  ],
])('Express, a limiter %s: a rule on the full path holds', async (_, mount) => {
  const app = express();
  mount(app, rateLimit({ rules, descriptors: [['path']], clock: clockAt(0), logger: collectingLogger() }));
  app.post('/api/login', (_req, res) => {
    res.send('ok');
  });
  await request(app).post('/api/login').expect(200);
  await request(app).post('/api/login').expect(429);
});
