import type { Duration } from '@sluice/core';
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
    app.get('/', goingOn('60s'), later(), (_req, res) => {
      res.send('ok');
    });
    await request(app).get('/').expect(200);
    const res = await request(app).get('/').expect(429);
    expect(draft11(res).state.L1).toEqual({ r: 0, t: 60 });
    expect(res.headers['retry-after']).toBe('60');
  },
);

/** A limiter of one request a `window`, whose refusal goes on (`next()`) to what follows it. */
const goingOn = (window: Duration) =>
  rateLimit({
    name: 'L1',
    limit: 1,
    window,
    algorithm: 'fixed-window',
    clock: clockAt(0),
    onLimited: (_req, _res, next) => next(),
  });

// The same, from a ban already in force after it: the ban's 30 s replaced the minute.
it('Express: a ban in force after a refusal gone on from answers no earlier than that refusal', async () => {
  const app = express();
  const banning = rateLimit({
    name: 'L2',
    limit: 1,
    window: '5s',
    algorithm: 'fixed-window',
    clock: clockAt(0),
    ban: { after: 0, duration: '30s' },
  });
  app.get('/', goingOn('60s'), banning, (_req, res) => {
    res.send('ok');
  });
  await request(app).get('/').expect(200);
  // Refused by both: the ban starts.
  expect((await request(app).get('/').expect(403)).headers['retry-after']).toBe('60');
  // Refused by the first, then by the ban in force.
  expect((await request(app).get('/').expect(403)).headers['retry-after']).toBe('60');
});

// And from a later limiter's pass that spent its last request: its t outlasted the refusal's
// Retry-After, which stayed.
it('Express: a pass that spends a later policy raises the Retry-After of a refusal gone on from', async () => {
  const app = express();
  const later = rateLimit({ name: 'L2', limit: 2, window: '60s', algorithm: 'fixed-window', clock: clockAt(0) });
  app.get('/', goingOn('10s'), later, (_req, res) => {
    res.send('ok');
  });
  await request(app).get('/').expect(200);
  const res = await request(app).get('/').expect(200);
  expect(draft11(res).state).toEqual({ L1: { r: 0, t: 10 }, L2: { r: 0, t: 60 } });
  expect(res.headers['retry-after']).toBe('60');
});
