import { rateLimit } from '@sluice/express';
import { parseRules } from '@sluice/rules';
import express from 'express';
import request from 'supertest';
import { expect, it } from 'vitest';
import { clockAt, collectingLogger, draft11 } from './helpers.js';

// Regression: an `onLimited` that goes on (`next()`) let a later limiter refuse the request
// too, and its shorter wait replaced the Retry-After, under a RateLimit item still saying the
// first policy was spent for longer: a client retrying then was refused again.
it.each([
  ['a limiter', () => rateLimit({ name: 'L2', limit: 1, window: '5s', algorithm: 'fixed-window', clock: clockAt(0) })],
  [
    'a rules-mode middleware',
    () =>
      rateLimit({
        rules: parseRules(
          'domain: api\ndescriptors:\n  - key: remote_address\n    rate_limit: { unit: second, requests_per_unit: 1 }\n',
        ),
        clock: clockAt(0),
        logger: collectingLogger(),
      }),
  ],
])(
  'Express: Retry-After is never earlier than an earlier refusal the request went on past, before %s',
  async (_, later) => {
    const app = express();
    const first = rateLimit({
      name: 'L1',
      limit: 1,
      window: '60s',
      algorithm: 'fixed-window',
      clock: clockAt(0),
      onLimited: (_req, _res, next) => next(),
    });
    app.get('/', first, later(), (_req, res) => {
      res.send('ok');
    });
    await request(app).get('/').expect(200);
    const res = await request(app).get('/').expect(429);
    expect(draft11(res).state.L1).toEqual({ r: 0, t: 60 });
    expect(res.headers['retry-after']).toBe('60');
  },
);
