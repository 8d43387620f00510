import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  type AdapterBinding,
  createHttpLimiter,
  createLimiter,
  type Decision,
  type DecisionEvent,
  type HttpLimiter,
  type Outcome,
  problemFor,
  problemJson,
  type QueueEvent,
  type RateLimitStore,
  retryAfterFieldMs,
  SLUICE_CHANNELS,
} from '@sluice/core';
import { createMemoryStore } from '@sluice/memory';
import { parseRules } from '@sluice/rules';
import { parseItem, parseList } from 'structured-headers';
import { afterEach, describe, expect, it } from 'vitest';
import { listen } from '../helpers/channels.js';
import { manualClock } from '../helpers/clock.js';
import { promiseStore } from '../helpers/stores.js';

interface Req {
  ip: string;
  headers: Record<string, string>;
  rawHeaders?: string[];
}
interface Res {
  fields: Record<string, string>;
  raw: ServerResponse;
}

/** A framework over plain objects; a response is an emitter, so a held request can be let go. */
const binding: AdapterBinding<Req, Res> = {
  rawRequest: (req) => req as unknown as IncomingMessage,
  requestUrl: () => '/',
  rawResponse: (res) => res.raw,
  clientIp: (req) => req.ip,
  proxyTrust: () => 'none',
  trustAdvice: 'trust your proxy.',
  setHeader: (res, name, value) => {
    res.fields[name.toLowerCase()] = value;
  },
  appendHeader: (res, name, value) => {
    const key = name.toLowerCase();
    res.fields[key] = res.fields[key] === undefined ? value : `${res.fields[key]}, ${value}`;
  },
};

const responses: Res[] = [];
const response = (): Res => {
  const fields: Record<string, string> = {};
  // The fields the binding sets read back as Node's response reads its own.
  const getHeader = (name: string) => fields[name.toLowerCase()];
  const raw = Object.assign(new EventEmitter(), { destroyed: false, writableEnded: false, getHeader });
  const res = { fields, raw: raw as unknown as ServerResponse };
  responses.push(res);
  return res;
};
// Held requests wait on a timer: closing their responses lets them go, so no test waits.
afterEach(() => {
  for (const res of responses.splice(0)) res.raw.emit('close');
});

const send = (limiter: HttpLimiter<Req, Res>, headers: Record<string, string> = {}) => {
  const res = response();
  // As Node gives them: `rawHeaders` as sent, which rules' `header.<name>` fields read.
  const rawHeaders = Object.entries(headers).flat();
  return { res, outcome: limiter.handle({ ip: '192.0.2.1', headers, rawHeaders }, res) };
};

/** Sends four requests of one client: two pass, the third is held, the fourth finds the queue full. */
async function fourth(limiter: HttpLimiter<Req, Res>, headers?: Record<string, string>) {
  for (let i = 0; i < 2; i++) expect((await send(limiter, headers).outcome).decision?.delayMs).toBe(0);
  const held = send(limiter, headers);
  expect(held.outcome).toBeInstanceOf(Promise);
  const { res, outcome } = send(limiter, headers);
  const refused = (await outcome) as Extract<Outcome, { action: 'limited' }>;
  expect(refused.action).toBe('limited');
  const retryAfterS = parseItem(res.fields['retry-after'] as string)[0] as number;
  const problem = JSON.parse(refused.refusal?.body as string) as { detail: string; 'violated-policies': string[] };
  const items = parseList(res.fields.ratelimit as string).map(([name, params]) => [name, Object.fromEntries(params)]);
  return { decision: refused.decision, retryAfterS, problem, state: Object.fromEntries(items) };
}

/** Two requests per 2 s; one beyond them is held, up to 5 s. */
const queued = { name: 'queued', limit: 2, window: '2s', algorithm: 'gcra', queue: { maxDelayMs: '5s' } } as const;
/** The same policy, as the rule for each `x-client`. */
const queuedRules = parseRules(`
domain: api
descriptors:
  - key: header.x-client
    policies: [{ name: queued, limit: 2, window: 2s, algorithm: gcra, queue: { maxDelayMs: 5s } }]
`);
/** A rules-mode limiter of `queued` with room for one held request. */
const ruled = (store: RateLimitStore = createMemoryStore()) =>
  createHttpLimiter<Req, Res>(
    { rules: queuedRules, descriptors: [['header.x-client']], maxQueued: 1, clock: manualClock(), store },
    binding,
  );

const restoredIn = (seconds: number) => `Quota restored for this request in ${seconds} s.`;
const entry = (decision: Decision, name: string) => decision.policies.find((p) => p.name === name);

describe('a request refused because the queue is full (maxQueued)', () => {
  const hourly = { name: 'hourly', limit: 100, window: '1h' } as const;

  // It named no violated policy, and its detail said 2 s where Retry-After said 4.
  it('names the queued policy as violated, with the detail stating the Retry-After wait', async () => {
    const clock = manualClock();
    const limiter = createHttpLimiter<Req, Res>(
      { policies: [queued, hourly], maxQueued: 1, clock, store: createMemoryStore() },
      binding,
    );
    const { decision, retryAfterS, problem, state } = await fourth(limiter);
    expect(problem['violated-policies']).toEqual(['queued']);
    expect(state.queued).toEqual({ r: 0, t: 2 });
    expect(problem.detail).toBe(restoredIn(retryAfterS));
    // Its slot comes 2 s from now (two passed, one held, at 1 s each): then it passes unqueued.
    expect(retryAfterS).toBe(2);
    expect(decision).toMatchObject({ allowed: false, retryAfterMs: 2000, delayMs: 0, limit: 2, remaining: 0 });
    expect(entry(decision, 'queued')).toMatchObject({ allowed: false, retryAfterMs: 2000, remaining: 0 });
    // The other policy allowed, and shows its quota with the refused request's charge given back.
    expect(entry(decision, 'hourly')).toMatchObject({ allowed: true, retryAfterMs: 0, remaining: 97 });
    expect(decision.overLimit).toBeUndefined();
  });

  // Every queued policy the charge left at zero was named, one that spent its last unit
  // without delaying the request too, and shown with none left though the refund gave it back.
  it('names only the queued policy that delayed it, when another spent its last unit', async () => {
    const clock = manualClock();
    const queue = { algorithm: 'gcra', queue: { maxDelayMs: '5s' } } as const;
    const limiter = createHttpLimiter<Req, Res>(
      {
        policies: [
          { name: 'fast', limit: 3, window: '1s', ...queue },
          { name: 'slow', limit: 1, window: '1s', ...queue },
        ],
        maxQueued: 1,
        clock,
        store: createMemoryStore(),
      },
      binding,
    );
    expect((await send(limiter).outcome).decision?.delayMs).toBe(0);
    expect(send(limiter).outcome).toBeInstanceOf(Promise); // `slow` holds it 1 s
    const { res, outcome } = send(limiter); // `fast` spends its last unit, `slow` would hold it 2 s
    const refused = (await outcome) as Extract<Outcome, { action: 'limited' }>;
    const problem = JSON.parse(refused.refusal?.body as string) as { 'violated-policies': string[] };
    expect(problem['violated-policies']).toEqual(['slow']);
    expect(entry(refused.decision, 'fast')).toMatchObject({ allowed: true, remaining: 1 });
    expect(entry(refused.decision, 'slow')).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 2000 });
    expect(parseItem(res.fields['retry-after'] as string)[0]).toBe(2);
  });

  it('says the same in rules mode, in the rule’s own RateLimit item', async () => {
    const { decision, retryAfterS, problem, state } = await fourth(ruled(), { 'x-client': 'c' });
    expect(problem['violated-policies']).toEqual(['queued']);
    expect(state.queued).toEqual({ r: 0, t: 2 });
    expect(problem.detail).toBe(restoredIn(retryAfterS));
    expect(retryAfterS).toBe(2);
    expect(decision).toMatchObject({ allowed: false, retryAfterMs: 2000, delayMs: 0 });
    expect(entry(decision, 'queued')).toMatchObject({ allowed: false, retryAfterMs: 2000 });
  });
});

describe('a request another rule refuses while the queue is full', () => {
  // It took the queue-full path after every rule's charge had been given back, and the rule
  // that queued it gave its charge back a second time: the held request's slot was handed out
  // again (the next refusal said 1 s where 2 s were due).
  it('gives each rule its charge back once', async () => {
    const rules = parseRules(`
domain: api
descriptors:
  - key: header.x-client
    policies: [{ name: queued, limit: 2, window: 2s, algorithm: gcra, queue: { maxDelayMs: 5s } }]
  - key: header.x-user
    policies: [{ name: user, limit: 1, window: 1h, algorithm: fixed-window }]
`);
    const limiter = createHttpLimiter<Req, Res>(
      {
        rules,
        descriptors: [['header.x-client'], ['header.x-user']],
        maxQueued: 1,
        clock: manualClock(),
        store: createMemoryStore(),
      },
      binding,
    );
    const as = (user: string) => send(limiter, { 'x-client': 'c', 'x-user': user });
    for (const user of ['u1', 'u2']) expect((await as(user).outcome).decision?.delayMs).toBe(0);
    expect(as('u3').outcome).toBeInstanceOf(Promise);
    // u1 has spent its hour: refused by the user rule, with nothing held.
    const byUser = (await as('u1').outcome) as Extract<Outcome, { action: 'limited' }>;
    expect(byUser.action).toBe('limited');
    // The next request finds the queue full; its slot is 2 s away (two passed, one held).
    const full = (await as('u5').outcome) as Extract<Outcome, { action: 'limited' }>;
    expect(full.decision).toMatchObject({ allowed: false, retryAfterMs: 2000 });
  });
});

describe('the events of a request the queue held or had no room for', () => {
  const plain = (store: RateLimitStore = createMemoryStore()) =>
    createHttpLimiter<Req, Res>(
      { policies: [queued], maxQueued: 1, clock: manualClock(), store, prefix: 'q' },
      binding,
    );

  // The limiter published the refused request as `queued` before the HTTP layer refused it:
  // metrics counted a 429 as queued (and near the limit), never as limited.
  it.each([
    ['plain, memory store', () => plain(), {}],
    ['plain, promise store', () => plain(promiseStore()), {}],
    ['rules, memory store', () => ruled(), { 'x-client': 'c' }],
    ['rules, promise store', () => ruled(promiseStore()), { 'x-client': 'c' }],
  ])('publishes a refusal for a full queue as limited (%s)', async (_mode, make, headers) => {
    const events = listen<DecisionEvent>(SLUICE_CHANNELS.decision);
    const { decision } = await fourth(make(), headers);
    expect(events.map((e) => [e.policy, e.result])).toEqual([
      ['queued', 'allowed'],
      ['queued', 'allowed'],
      ['queued', 'queued'],
      ['queued', 'limited'],
    ]);
    const refusal = events[3] as DecisionEvent;
    expect(refusal.decision).toEqual(decision);
    expect(refusal.decision).toMatchObject({ allowed: false, retryAfterMs: 2000, delayMs: 0 });
    expect(refusal.cost).toBe(1);
  });

  // In rules mode the hold was published under the limiter name '', not the rule's.
  it.each([
    ['plain', () => plain(), {}],
    ['rules', () => ruled(), { 'x-client': 'c' }],
  ])('publishes a hold under the limiter its decisions name (%s)', async (_mode, make, headers) => {
    const decisions = listen<DecisionEvent>(SLUICE_CHANNELS.decision);
    const holds = listen<QueueEvent>(SLUICE_CHANNELS.queue);
    const limiter = make();
    for (let i = 0; i < 2; i++) await send(limiter, headers).outcome;
    const begun = new Promise<void>((resolve) => {
      const once = () => {
        unsubscribe(SLUICE_CHANNELS.queue, once);
        resolve();
      };
      subscribe(SLUICE_CHANNELS.queue, once);
    });
    const { res, outcome } = send(limiter, headers);
    await begun;
    res.raw.emit('close');
    expect(await outcome).toMatchObject({ action: 'gone' });
    const name = (decisions[2] as DecisionEvent).limiter;
    expect(name).not.toBe('');
    expect(holds.map((e) => [e.phase, e.limiter])).toEqual([
      ['held', name],
      ['released', name],
    ]);
  });
});

describe('the problem document of a refusal', () => {
  // Its detail took the decision's own wait, which a policy with no quota left can outlast.
  it('states the wait Retry-After carries, not a shorter one', async () => {
    const limiter = createLimiter({
      policies: [
        { name: 'second', limit: 1, window: '1s', algorithm: 'fixed-window' },
        { name: 'minute', limit: 2, window: '1m', algorithm: 'fixed-window' },
      ],
      throttle: { mode: 'soft', overagePercent: 100 },
      clock: manualClock(0),
      store: createMemoryStore(),
    });
    for (let i = 0; i < 2; i++) await limiter.consume('c');
    // `second` refuses for 1 s; `minute` allowed into its overage, with no base quota left.
    const decision = await limiter.consume('c');
    expect(decision.retryAfterMs).toBe(1000);
    const waitS = Math.ceil((retryAfterFieldMs(decision) as number) / 1000);
    expect(waitS).toBe(60);
    expect(JSON.parse(problemJson(decision)).detail).toBe(restoredIn(waitS));
    expect(problemFor(decision).detail).toBe(restoredIn(waitS));
  });
});

describe("the middleware's refunds are dated by their charge", () => {
  /** A remote store that charges at once; after `hold()`, its next answer waits until opened. */
  const gatedStore = () => {
    const inner = createMemoryStore();
    let gate: Promise<void> | undefined;
    const store: RateLimitStore = {
      name: 'gated',
      consume: async (request) => {
        const held = gate;
        gate = undefined;
        const reply = await inner.consume(request);
        if (held !== undefined) await held;
        return reply;
      },
      reset: (...args) => inner.reset(...args),
      refund: (request) => inner.refund(request),
    };
    const hold = () => {
      let open: () => void = () => {};
      gate = new Promise((resolve) => {
        open = resolve;
      });
      return open;
    };
    return { store, hold };
  };
  const turn = () => new Promise((resolve) => setImmediate(resolve));
  const byClient = (req: Req) => req.headers['x-client'] as string;

  // Undated, the refund of a charge the full queue refused gave back a later request's units:
  // the bucket's slot, spent since by another request, came back whole.
  it('a charge the full queue refuses gives back no later request’s units', async () => {
    const clock = manualClock();
    const { store, hold } = gatedStore();
    const options = { limit: 10, window: '1s', algorithm: 'gcra', burst: 1, queue: { maxDelayMs: 2000 } } as const;
    const limiter = createHttpLimiter<Req, Res>({ ...options, maxQueued: 1, clock, store, key: byClient }, binding);
    const ask = (client: string) => send(limiter, { 'x-client': client }).outcome;
    expect((await ask('y')).action).toBe('next');
    void ask('y');
    await turn();
    expect((await ask('x')).action).toBe('next');
    clock.advance(10);
    const open = hold();
    const late = ask('x');
    await turn();
    clock.advance(190);
    open();
    expect((await ask('x')).action).toBe('next');
    expect((await late).action).toBe('limited');
    expect((await ask('x')).action).toBe('limited');
  });

  /**
   * Six requests of one client booked from 0 ms, 100 ms apart (gcra, 10 per second, a burst of
   * 1); the sixth's client leaves at 250 ms; the delay a request at 300 ms is given.
   */
  const delayAfterALeaver = async (limiter: HttpLimiter<Req, Res>, clock: ReturnType<typeof manualClock>) => {
    const client = { 'x-client': 'a' };
    const booked = Array.from({ length: 6 }, () => send(limiter, client));
    const leaving = booked[5] as ReturnType<typeof send>;
    // Rules mode decides after a turn: every request is held before its client leaves.
    await turn();
    clock.advance(250);
    leaving.res.raw.emit('close');
    expect((await leaving.outcome).action).toBe('gone');
    await turn();
    clock.advance(50);
    const next = send(limiter, client);
    await turn();
    next.res.raw.emit('close');
    return (await next.outcome).decision?.delayMs;
  };

  // Dated at the ask, a queued slot its client left counted its hold as time it had refilled,
  // and gcra gave back none of it: the next request waited for a slot no one used. Its slot is
  // the one given back: 500 ms after the first request, 200 ms from then.
  it('a queue slot its client left is given back from the time it was booked for', async () => {
    const clock = manualClock();
    const options = { limit: 10, window: '1s', algorithm: 'gcra', burst: 1, queue: { maxDelayMs: 2000 } } as const;
    const limiter = createHttpLimiter<Req, Res>({ ...options, clock, store: createMemoryStore() }, binding);
    expect(await delayAfterALeaver(limiter, clock)).toBe(200);
  });

  it('so is a rule’s queue slot its client left (rules mode)', async () => {
    const rules = parseRules(`
domain: api
descriptors:
  - key: header.x-client
    policies: [{ name: q, limit: 10, window: 1s, algorithm: gcra, burst: 1, queue: { maxDelayMs: 2s } }]
`);
    const clock = manualClock();
    const options = { rules, descriptors: [['header.x-client']], clock, store: createMemoryStore() };
    expect(await delayAfterALeaver(createHttpLimiter<Req, Res>(options, binding), clock)).toBe(200);
  });

  // Other middleware answered while the store decided: the charge was given back undated, and
  // a window that had turned meanwhile gave up a unit of the next window's count.
  it('a charge made while other middleware answered is given back only from its own window', async () => {
    const clock = manualClock();
    const { store, hold } = gatedStore();
    const options = { limit: 2, window: '1s', algorithm: 'fixed-window', clock, store } as const;
    const limiter = createHttpLimiter<Req, Res>(options, binding);
    clock.advance(950);
    const open = hold();
    const answeredMeanwhile = send(limiter);
    await turn();
    clock.advance(60);
    for (let i = 0; i < 2; i++) expect((await send(limiter).outcome).action).toBe('next');
    Object.assign(answeredMeanwhile.res.raw, { headersSent: true });
    open();
    await Promise.resolve(answeredMeanwhile.outcome).catch(() => {});
    await turn();
    expect((await send(limiter).outcome).action).toBe('limited');
  });
});
