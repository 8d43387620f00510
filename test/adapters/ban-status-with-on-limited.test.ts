import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import { harnesses, type RunningApp } from './harness/index.js';
import { clockAt, collectingLogger } from './helpers.js';

/**
 * `ban.status` (403 by default) is the status of the response to a banned client, and
 * `onLimited` answers bans too. With `onLimited`, the status its response started from was the
 * quota's 429 (Koa, Fastify; Express none at all), so a banned client was told it was merely over
 * its quota. The response now starts from the ban's status.
 */
const bodyOnly = {
  express: (_req: unknown, res: { json(body: unknown): void }, _next: unknown, decision: { reason?: string }) =>
    res.json({ reason: decision.reason ?? 'over' }),
  koa: (ctx: { body: unknown }, decision: { reason?: string }) => {
    ctx.body = { reason: decision.reason ?? 'over' };
  },
  fastify: (_request: unknown, reply: { send(body: unknown): void }, decision: { reason?: string }) =>
    reply.send({ reason: decision.reason ?? 'over' }),
};

describe.each(harnesses)('$name: a ban answered by onLimited', (harness) => {
  let app: RunningApp | undefined;
  afterEach(() => app?.close());

  it.each([
    [undefined, 403],
    [429, 429],
  ])('starts from the ban status (%s: %i)', async (status, expected) => {
    const ban = { after: 0, duration: '1h', ...(status === undefined ? {} : { status }) };
    app = await harness.start({
      limits: [
        {
          algorithm: 'fixed-window',
          limit: 1,
          window: '1m',
          ban,
          onLimited: bodyOnly[harness.name],
          clock: clockAt(0),
          logger: collectingLogger(),
        },
      ],
    });
    await request(app.url).get('/').expect(200);
    // The refusal that starts the ban is answered as the ban.
    const first = await request(app.url).get('/').expect(expected);
    expect(first.body).toEqual({ reason: 'banned' });
    const later = await request(app.url).get('/').expect(expected);
    expect([later.body, later.headers['retry-after']]).toEqual([{ reason: 'banned' }, '3600']);
  });
});
