import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  type DecisionEvent,
  type QueueEvent,
  type RateLimitStore,
  type RefundEvent,
  SLUICE_CHANNELS,
} from '@sluice/core';
import { rateLimit as expressRateLimit } from '@sluice/express';
import { rateLimitPlugin } from '@sluice/fastify';
import { rateLimit as koaRateLimit } from '@sluice/koa';
import { createMemoryStore } from '@sluice/memory';
import { parseRules } from '@sluice/rules';
import express, { type NextFunction, type Request, type Response } from 'express';
import Fastify from 'fastify';
import Koa from 'koa';
import request from 'supertest';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { listen as listenTo } from '../helpers/channels.js';
import { clockAt, collectingLogger, onLoopback } from './helpers.js';

/**
 * Middleware that answers a request while the limiter awaits (a request timeout, say) leaves
 * the limiter a response whose headers are sent. The limiter then charged the request and
 * wrote its fields into it, which failed with Node's uncoded ERR_HTTP_HEADERS_SENT (Express;
 * Koa and Fastify dropped the writes unseen), at every await: a function of the user's, the
 * store, a ban's check or strike, a full queue's refund, a `message` function. Now the request
 * fails with ERR_SLUICE_HEADERS_SENT and what it was charged, and only that, is given back.
 */

/** Where the request is answered early: the `calls`-th call of `at` from now. */
type Await = 'skip' | 'allowList' | 'key' | 'cost' | 'message' | 'consume' | 'refund';
let answerAt: { at: Await; calls: number } | undefined;
/** Whether that call of the store fails too, after answering (a fail policy then decides). */
let failing = false;
/** The raw response of each request in flight, and the request the store decides for (one at a time here). */
const responses = new WeakMap<IncomingMessage, ServerResponse>();
let current: IncomingMessage | undefined;
/** The store's consumes so far. */
let consumes = 0;

/** Answers the request, as a timeout would, when this is the call `answerAt` names. */
function reached(at: Await, raw = current as IncomingMessage): void {
  current = raw;
  if (answerAt?.at !== at || --answerAt.calls > 0) return;
  answerAt = undefined;
  (responses.get(raw) as ServerResponse).writeHead(503).end('timed out');
  if (failing) {
    failing = false;
    throw new Error('the store failed');
  }
}

/** A memory store whose calls may find the request answered meanwhile. */
function storeAnsweringMeanwhile(): RateLimitStore {
  const store = createMemoryStore();
  return {
    name: 'memory-answering-meanwhile',
    consume: async (request) => {
      consumes++;
      reached('consume');
      return store.consume(request);
    },
    reset: (namespace, key, policies) => store.reset(namespace, key, policies),
    refund: async (request) => {
      reached('refund');
      return store.refund(request);
    },
  };
}

type Mode = 'policies' | 'rules';
type RawOf = (req: never) => IncomingMessage;

/** What each case adds to a limit of 2 a minute on the client's address (gcra, for a queue). */
interface Case {
  extra?: (rawOf: RawOf) => Record<string, unknown>;
  queue?: boolean;
}

function optionsFor(mode: Mode, { extra, queue }: Case, rawOf: RawOf) {
  const policy = queue
    ? { algorithm: 'gcra', limit: 1, window: '1s', queue: { maxDelayMs: 5000 } }
    : { algorithm: 'fixed-window', limit: 2, window: '1m' };
  const common = {
    clock: clockAt(0),
    logger: collectingLogger(),
    store: storeAnsweringMeanwhile(),
    ...(queue ? { maxQueued: 1 } : {}),
  };
  if (mode === 'policies') return { ...common, ...policy, ...extra?.(rawOf) };
  const rule = queue
    ? '{ name: q, limit: 1, window: 1s, algorithm: gcra, queue: { maxDelayMs: 5s } }'
    : '{ name: per-client, limit: 2, window: 1m, algorithm: fixed-window }';
  return {
    ...common,
    rules: parseRules(`
domain: api
descriptors:
  - key: remote_address
    policies: [${rule}]
`),
    ...extra?.(rawOf),
  };
}

/** Every request's raw response noted, for whatever answers it early. */
const noting = (handler: (req: IncomingMessage, res: ServerResponse) => void) =>
  createServer((req, res) => {
    responses.set(req, res);
    current = req;
    handler(req, res);
  });

interface Served {
  url: string;
  errors: unknown[];
  close(): Promise<void>;
}

type App = (mode: Mode, served: Case) => Promise<Served>;

const apps: Record<string, App> = {
  async express(mode, served) {
    const errors: unknown[] = [];
    const app = express();
    app.use(expressRateLimit(optionsFor(mode, served, (req: Request) => req) as never));
    app.get('/', (_req, res) => {
      res.end('handled');
    });
    app.use((error: unknown, _req: Request, res: Response, _next: NextFunction) => {
      errors.push(error);
      res.end();
    });
    return { ...(await onLoopback(noting(app))), errors };
  },
  async koa(mode, served) {
    const errors: unknown[] = [];
    const app = new Koa();
    app.silent = true;
    app.on('error', (error: unknown, ctx: Koa.Context) => {
      errors.push(error);
      ctx.res.end();
    });
    app.use(koaRateLimit(optionsFor(mode, served, (ctx: Koa.Context) => ctx.req) as never));
    app.use((ctx) => {
      ctx.body = 'handled';
    });
    return { ...(await onLoopback(noting(app.callback()))), errors };
  },
  async fastify(mode, served) {
    // A hook's error after the reply was sent (ended) goes to Fastify's log, not the error handler.
    const errors: unknown[] = [];
    const stream = { write: (line: string) => errors.push((JSON.parse(line) as { err: unknown }).err) };
    const app = Fastify({
      serverFactory: (handler) => noting(handler),
      logger: { level: 'error', stream },
      forceCloseConnections: true,
    });
    // Headers sent and the response left open: the error reaches the error handler.
    app.setErrorHandler((error, _request, reply) => {
      errors.push(error);
      reply.raw.end();
    });
    await app.register(rateLimitPlugin, optionsFor(mode, served, (req: { raw: IncomingMessage }) => req.raw) as never);
    app.get('/', async () => 'handled');
    await app.listen({ port: 0, host: '127.0.0.1' });
    return {
      url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`,
      errors,
      close: () => app.close(),
    };
  },
};

const answeredMeanwhile = {
  code: 'ERR_SLUICE_HEADERS_SENT',
  message: expect.stringMatching(/while the rate limiter decided/),
};

const answers = { skip: true, allowList: true, key: 'client', cost: 1, message: 'slow down' };
const awaiting = (at: keyof typeof answers) => (rawOf: RawOf) => ({
  [at]: async (req: never) => {
    reached(at, rawOf(req));
    return answers[at];
  },
});

describe.each(Object.keys(apps))('%s: a response answered by other middleware while the limiter decides', (name) => {
  let served: Served | undefined;
  const serve = async (mode: Mode, what: Case = {}) => {
    served = await (apps[name] as App)(mode, what);
    return served;
  };
  const get = async () => {
    const res = await request((served as Served).url)
      .get('/')
      .timeout(2000);
    return `${res.status} ${res.status === 200 || res.status === 503 ? res.text : ''}`.trim();
  };
  afterEach(async () => {
    answerAt = undefined;
    failing = false;
    consumes = 0;
    await served?.close();
  });

  describe.each(['policies', 'rules'] as const)('with %s', (mode) => {
    it.each(['cost', 'consume'] as const)(
      'awaiting the %s, fails with ERR_SLUICE_HEADERS_SENT and gives back what it charged, only that',
      async (at) => {
        const app = await serve(mode, at === 'cost' ? { extra: awaiting('cost') } : {});
        expect(await get()).toBe('200 handled');
        answerAt = { at, calls: 1 };
        expect(await get()).toBe('503 timed out');
        expect(app.errors).toEqual([expect.objectContaining(answeredMeanwhile)]);
        // Answered before the store was asked, it is not asked.
        expect(consumes).toBe(at === 'cost' ? 1 : 2);
        // The limit is 2: the request answered early spent nothing, and the first still counts.
        expect([await get(), await get()]).toEqual(['200 handled', '429']);
      },
    );

    it('refused while answered, gives nothing back', async () => {
      const app = await serve(mode);
      expect([await get(), await get()]).toEqual(['200 handled', '200 handled']);
      answerAt = { at: 'consume', calls: 1 };
      expect(await get()).toBe('503 timed out');
      expect(app.errors).toEqual([expect.objectContaining(answeredMeanwhile)]);
      expect(await get()).toBe('429');
    });

    it('let through by the fail policy, gives nothing back: the store charged nothing', async () => {
      const app = await serve(mode);
      expect(await get()).toBe('200 handled');
      answerAt = { at: 'consume', calls: 1 };
      failing = true;
      expect(await get()).toBe('503 timed out');
      expect(app.errors).toEqual([expect.objectContaining(answeredMeanwhile)]);
      expect([await get(), await get()]).toEqual(['200 handled', '429']);
    });

    it('awaiting a `message` function for its refusal, fails with ERR_SLUICE_HEADERS_SENT', async () => {
      const app = await serve(mode, { extra: awaiting('message') });
      expect([await get(), await get()]).toEqual(['200 handled', '200 handled']);
      answerAt = { at: 'message', calls: 1 };
      expect(await get()).toBe('503 timed out');
      expect(app.errors).toEqual([expect.objectContaining(answeredMeanwhile)]);
    });

    it('awaiting the refund of a full queue, fails with ERR_SLUICE_HEADERS_SENT', async () => {
      const app = await serve(mode, { queue: true });
      expect(await get()).toBe('200 handled');
      // Held a second (real time): the queue's one place. The server's close ends it.
      const held = request(app.url)
        .get('/')
        .then(
          () => {},
          () => {},
        );
      answerAt = { at: 'refund', calls: 1 };
      expect(await get()).toBe('503 timed out');
      expect(app.errors).toEqual([expect.objectContaining(answeredMeanwhile)]);
      void held;
    });
  });

  it.each([
    ["a ban's check", 3, 1],
    ["a ban's strike", 2, 3],
  ] as const)('with policies, awaiting %s, fails with ERR_SLUICE_HEADERS_SENT', async (_what, nth, consume) => {
    // Store calls: the ban's check, the decision, then a refusal's strikes.
    const app = await serve('policies', { extra: () => ({ limit: 1, ban: { after: 0, duration: '1h' } }) });
    for (let i = 1; i < nth; i++) await get();
    answerAt = { at: 'consume', calls: consume };
    expect(await get()).toBe('503 timed out');
    expect(app.errors).toEqual([expect.objectContaining(answeredMeanwhile)]);
  });

  it('with policies, awaiting the key function, fails with ERR_SLUICE_HEADERS_SENT and asks the store nothing', async () => {
    const app = await serve('policies', { extra: awaiting('key') });
    answerAt = { at: 'key', calls: 1 };
    expect(await get()).toBe('503 timed out');
    expect(app.errors).toEqual([expect.objectContaining(answeredMeanwhile)]);
    expect(consumes).toBe(0);
    expect([await get(), await get(), await get()]).toEqual(['200 handled', '200 handled', '429']);
  });

  // A request a function of the user's let pass went on into the answered response, where the
  // app's handler failed with Node's ERR_HTTP_HEADERS_SENT.
  it.each([
    ['policies', 'skip'],
    ['policies', 'allowList'],
    ['rules', 'skip'],
  ] as const)(
    'with %s, awaiting a %s function that lets the request pass, fails with ERR_SLUICE_HEADERS_SENT',
    async (mode, at) => {
      const app = await serve(mode, { extra: awaiting(at) });
      answerAt = { at, calls: 1 };
      expect(await get()).toBe('503 timed out');
      expect(app.errors).toEqual([expect.objectContaining(answeredMeanwhile)]);
    },
  );

  it.each(['policies', 'rules'] as const)(
    'with %s, a queued decision answered meanwhile goes out as decided, and its charge comes back',
    async (mode) => {
      const app = await serve(mode, { queue: true });
      expect(await get()).toBe('200 handled');
      const decisions = listenTo<DecisionEvent>(SLUICE_CHANNELS.decision);
      const refunds = listenTo<RefundEvent>(SLUICE_CHANNELS.refund);
      answerAt = { at: 'consume', calls: 1 };
      expect(await get()).toBe('503 timed out');
      expect(app.errors).toEqual([expect.objectContaining(answeredMeanwhile)]);
      await vi.waitFor(() => expect(refunds).toHaveLength(1));
      expect(decisions.map((d) => d.result)).toEqual(['queued']);
    },
  );

  // Headers sent during the hold with the response left open (a stream) let the held request go
  // on into it, where the handler failed with Node's ERR_HTTP_HEADERS_SENT, its slot kept.
  it.each(['policies', 'rules'] as const)(
    'with %s, answered during the queue hold and left open, fails with ERR_SLUICE_HEADERS_SENT and gives the slot back',
    async (mode) => {
      const app = await serve(mode, { queue: true });
      expect(await get()).toBe('200 handled');
      const refunds = listenTo<RefundEvent>(SLUICE_CHANNELS.refund);
      const queued = listenTo<QueueEvent>(SLUICE_CHANNELS.queue);
      const held = get();
      await vi.waitFor(() => expect(queued.map((event) => event.phase)).toEqual(['held']));
      (responses.get(current as IncomingMessage) as ServerResponse).writeHead(503).write('timed out');
      // Held a second (real time), then let go into the answered response.
      await vi.waitFor(() => expect(app.errors).toEqual([expect.objectContaining(answeredMeanwhile)]), 3000);
      expect(refunds).toHaveLength(1);
      await held;
    },
  );

  it('with policies in shadow mode, a request over the limit answered meanwhile gives nothing back: shadow mode charged nothing', async () => {
    const app = await serve('policies', { extra: () => ({ throttle: { mode: 'shadow' } }) });
    expect([await get(), await get()]).toEqual(['200 handled', '200 handled']);
    const refunds = listenTo<RefundEvent>(SLUICE_CHANNELS.refund);
    answerAt = { at: 'consume', calls: 1 };
    expect(await get()).toBe('503 timed out');
    expect(app.errors).toEqual([expect.objectContaining(answeredMeanwhile)]);
    expect(await get()).toBe('200 handled');
    expect(refunds).toEqual([]);
  });

  // A refused request's charges are given back as it is refused: given back again, the rule
  // that allowed it lost a unit it had counted.
  it('with rules, a request one rule refuses, answered meanwhile, is given back once', async () => {
    const rules = parseRules(`
domain: api
descriptors:
  - key: remote_address
    policies: [{ name: per-client, limit: 3, window: 1m, algorithm: fixed-window }]
  - key: path
    policies: [{ name: per-path, limit: 1, window: 1m, algorithm: fixed-window }]
`);
    const app = await serve('rules', { extra: () => ({ rules, descriptors: [['remote_address'], ['path']] }) });
    expect(await get()).toBe('200 handled');
    answerAt = { at: 'consume', calls: 1 };
    expect(await get()).toBe('503 timed out');
    expect(app.errors).toEqual([expect.objectContaining(answeredMeanwhile)]);
    // per-client holds 1 of 3: two more paths pass, the third is refused.
    const statuses = [];
    for (const path of ['/a', '/b', '/c']) statuses.push((await request(app.url).get(path).timeout(2000)).status);
    expect(statuses.map((status) => status === 429)).toEqual([false, false, true]);
  });
});
