import { type OnLimited, rateLimitPlugin } from '@sluice/fastify';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { clockAt, collectingLogger } from './helpers.js';

const base = { algorithm: 'fixed-window', limit: 1, window: '1m', logger: collectingLogger() } as const;

describe('fastify: a refusal answered by onLimited', () => {
  let app: FastifyInstance;
  afterEach(() => app.close());

  /**
   * An app whose one route counts the requests its handler served; its second request is
   * refused. With `slowOnSend`, an async `onSend` hook (a compressor's, say) that finishes on a
   * later turn counts the replies it sees.
   */
  async function refusedBy(onLimited: OnLimited, logLines: string[] = [], slowOnSend?: { calls: number }) {
    let served = 0;
    app = Fastify({ logger: { level: 'warn', stream: { write: (line: string) => logLines.push(line) } } });
    if (slowOnSend !== undefined)
      app.addHook('onSend', async (_request, _reply, payload) => {
        slowOnSend.calls++;
        await new Promise((resolve) => setImmediate(resolve));
        return payload;
      });
    await app.register(rateLimitPlugin, { ...base, clock: clockAt(0), onLimited });
    app.post('/login', async () => {
      served++;
      return { loggedIn: true };
    });
    await app.inject({ method: 'POST', url: '/login' });
    const res = await app.inject({ method: 'POST', url: '/login' });
    return { res, served };
  }

  it('never reaches the handler when onLimited returns a body instead of sending (it failed open)', async () => {
    const { res, served } = await refusedBy(async () => ({ error: 'slow down' }));
    expect(served).toBe(1);
    expect(res.statusCode).toBe(429);
    expect(res.json()).toEqual({ error: 'slow down' });
    expect(res.headers['retry-after']).toBe('60');
  });

  it('keeps the status onLimited set with the body it returns', async () => {
    const { res, served } = await refusedBy(async (_request, reply) => {
      reply.code(503);
      return 'busy';
    });
    expect(served).toBe(1);
    expect([res.statusCode, res.body]).toEqual([503, 'busy']);
  });

  it('sends the default refusal when onLimited neither sends nor returns anything', async () => {
    const { res, served } = await refusedBy(() => undefined);
    expect(served).toBe(1);
    expect(res.statusCode).toBe(429);
    expect(res.headers['content-type']).toBe('application/problem+json; charset=utf-8');
    expect(res.json()).toMatchObject({ status: 429, 'violated-policies': ['1-per-1m'] });
  });

  it('leaves a reply onLimited sent as it is', async () => {
    const { res, served } = await refusedBy((_request, reply) => reply.code(418).send('teapot'));
    expect(served).toBe(1);
    expect([res.statusCode, res.body]).toEqual([418, 'teapot']);
  });

  it.each([
    [
      'at once',
      ((_request, reply) => {
        reply.code(418).send('teapot');
        throw new Error('failed after sending');
      }) as OnLimited,
    ],
    [
      'later',
      (async (_request, reply) => {
        reply.code(418).send('teapot');
        await Promise.resolve();
        throw new Error('failed after sending');
      }) as OnLimited,
    ],
  ])(
    'logs what onLimited throws %s after sending, as Fastify logs a handler that does (it was dropped unseen)',
    async (_, onLimited) => {
      const logLines: string[] = [];
      const { res, served } = await refusedBy(onLimited, logLines);
      expect(served).toBe(1);
      expect([res.statusCode, res.body]).toEqual([418, 'teapot']);
      const logged = logLines.map((line) => JSON.parse(line));
      expect(logged).toMatchObject([{ level: 50, err: { message: 'failed after sending' } }]);
    },
  );

  it.each([
    [
      'sync',
      ((_request, reply) => {
        reply.send({ error: 'slow down' });
      }) as OnLimited,
    ],
    [
      'async, returning the reply',
      (async (_request, reply) => {
        reply.send({ error: 'slow down' });
        return reply;
      }) as OnLimited,
    ],
  ])('sends a reply onLimited sent (%s) once, while an async onSend hook runs', async (_, onLimited) => {
    const logLines: string[] = [];
    const onSend = { calls: 0 };
    const { res, served } = await refusedBy(onLimited, logLines, onSend);
    expect(served).toBe(1);
    expect([res.statusCode, res.headers['content-type'], res.json()]).toEqual([
      429,
      'application/json; charset=utf-8',
      { error: 'slow down' },
    ]);
    // One for the first request's answer, one for the refusal.
    expect(onSend.calls).toBe(2);
    expect(logLines).toEqual([]);
  });

  it('logs what onLimited throws after sending while an async onSend hook runs, and keeps its reply', async () => {
    const logLines: string[] = [];
    const onSend = { calls: 0 };
    const { res } = await refusedBy(
      (_request, reply) => {
        reply.code(418).send('teapot');
        throw new Error('failed after sending');
      },
      logLines,
      onSend,
    );
    expect([res.statusCode, res.body, onSend.calls]).toEqual([418, 'teapot', 2]);
    expect(logLines.map((line) => JSON.parse(line))).toMatchObject([
      { level: 50, err: { message: 'failed after sending' } },
    ]);
  });

  // A payload Fastify refuses makes `reply.send` throw, having sent nothing: counted as a reply
  // sent, the request was left unanswered.
  it('answers the error when onLimited’s reply.send throws, and the default refusal when it caught that', async () => {
    const thrown = await refusedBy((_request, reply) => {
      reply.type('text/plain').send(12345);
    });
    expect(thrown.res.statusCode).toBe(500);
    expect(thrown.res.json()).toMatchObject({ code: 'FST_ERR_REP_INVALID_PAYLOAD_TYPE' });
    await app.close();
    const caught = await refusedBy((_request, reply) => {
      try {
        reply.type('text/plain').send(12345);
      } catch {
        // Left to the default refusal.
      }
    });
    expect(caught.res.statusCode).toBe(429);
    expect(caught.res.json()).toMatchObject({ status: 429 });
  });

  it('keeps a send another plugin put on the reply, and goes through it', async () => {
    const seen: string[] = [];
    app = Fastify();
    app.addHook('onRequest', async (_request, reply) => {
      const { send } = reply;
      reply.send = function wrapped(this: typeof reply, payload?: unknown) {
        seen.push('wrapper');
        return send.call(this, payload);
      };
    });
    app.addHook('onResponse', async (_request, reply) => {
      seen.push(Object.hasOwn(reply, 'send') ? 'own send kept' : 'own send lost');
    });
    await app.register(rateLimitPlugin, { ...base, clock: clockAt(0), onLimited: () => ({ custom: 1 }) });
    app.get('/', async () => 'ok');
    await app.inject('/');
    seen.length = 0;
    const res = await app.inject('/');
    expect([res.statusCode, res.json()]).toEqual([429, { custom: 1 }]);
    expect(seen).toEqual(['wrapper', 'own send kept']);
  });
});
