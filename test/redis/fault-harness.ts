import { performance } from 'node:perf_hooks';
import {
  createLimiter,
  type Decision,
  isSluiceError,
  type Limiter,
  type OnStoreError,
  OUTAGE_QUIET_MS,
  type RateLimitStore,
  type StoreReply,
} from '@sluice/core';
import { createRedisStore } from '@sluice/redis';
import type { Redis } from 'ioredis';
import { waitFor } from '../helpers/redis-server.js';
import { storedState } from '../helpers/redis-state.js';

export const STORE_TIMEOUT_MS = 100;
/** Slack for timers and a busy event loop on a small CI machine. */
export const LATENCY_MARGIN_MS = 100;
export const NOW = 1_700_000_000_000;
export const KEY = 'hot';

/**
 * The outage is over once the store has answered for OUTAGE_QUIET_MS without a failure: after
 * the load, let that pass and ask once more, so the recovery is logged.
 */
export async function confirmRecovery(limiter: Limiter): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, OUTAGE_QUIET_MS));
  const decision = await limiter.consume(KEY);
  if (decision.reason !== undefined) throw new Error(`the store did not answer after the outage: ${decision.reason}`);
}
export const LIMIT = 1_000_000;

/** One call as a client saw it. */
export interface Outcome {
  decision?: Decision;
  error?: unknown;
  latencyMs: number;
}

/**
 * A limiter on a real Redis store, instrumented only around the store: every reply the store
 * produced is recorded, including replies that arrive after the limiter stopped waiting, each
 * tagged with whether the client had seen its connection close by then.
 */
export function faultLimiter(client: Redis, prefix: string, onStoreError: OnStoreError) {
  const redisStore = createRedisStore({ client, prefix });
  const replies: { reply: StoreReply; afterClose: boolean }[] = [];
  const warnings: string[] = [];
  let closed = false;
  let refunded = 0;
  const onClose = () => {
    closed = true;
  };
  client.on('close', onClose);
  const store: RateLimitStore = {
    name: redisStore.name,
    consume: async (request) => {
      const reply = await redisStore.consume(request);
      replies.push({ reply, afterClose: closed });
      return reply;
    },
    // A late answer's charge is given back under 'deny', which refused its request.
    refund: async (request) => {
      await redisStore.refund(request);
      refunded++;
    },
    reset: (...args) => redisStore.reset(...args),
  };
  const limiter = createLimiter({
    policies: [
      { name: 'counter', limit: LIMIT, window: '1h', algorithm: 'fixed-window' },
      { name: 'log', limit: LIMIT, window: '1h', algorithm: 'sliding-window-log' },
    ],
    store,
    prefix: 'fault',
    clock: () => NOW,
    onStoreError,
    storeTimeoutMs: STORE_TIMEOUT_MS,
    logger: { warn: (message) => warnings.push(message) },
  });
  return {
    limiter,
    replies,
    warnings,
    /** Charges Redis answered for and kept (not given back), counting only replies after the first close when asked. */
    charged: (afterCloseOnly = false) =>
      replies.filter((r) => r.reply.allowed && (!afterCloseOnly || r.afterClose)).length - refunded,
    detach: () => {
      client.off('close', onClose);
    },
  };
}

/**
 * Keeps `concurrency` clients calling `consume` until stopped, each pausing a millisecond
 * between calls so a store that fails fast does not spin the event loop.
 */
export function startLoad(limiter: Limiter, concurrency = 16) {
  const outcomes: Outcome[] = [];
  let running = true;
  const worker = async () => {
    while (running) {
      const started = performance.now();
      try {
        const decision = await limiter.consume(KEY);
        outcomes.push({ decision, latencyMs: performance.now() - started });
      } catch (error) {
        outcomes.push({ error, latencyMs: performance.now() - started });
      }
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
  };
  const workers = Array.from({ length: concurrency }, worker);
  const count = (predicate: (o: Outcome) => boolean) => outcomes.filter(predicate).length;
  return {
    outcomes,
    decidedByRedis: () => count((o) => o.decision !== undefined && o.decision.reason === undefined),
    failed: () => count((o) => o.error !== undefined || o.decision?.reason === 'store-unavailable'),
    /** Waits until `predicate` holds over the outcomes so far (bounded). */
    until: (what: string, predicate: () => boolean, timeoutMs = 15_000) =>
      waitFor(what, async () => predicate(), timeoutMs),
    async stop() {
      running = false;
      await Promise.all(workers);
    },
  };
}

/** The fail policy at work: what a request gets when Redis did not decide. */
export function expectFailPolicy(outcomes: Outcome[], onStoreError: OnStoreError): number {
  let failures = 0;
  for (const o of outcomes) {
    if (o.error !== undefined) {
      if (onStoreError !== 'throw' || !isSluiceError(o.error)) throw o.error;
      if (!['ERR_SLUICE_STORE_UNAVAILABLE', 'ERR_SLUICE_STORE_TIMEOUT'].includes(o.error.code)) throw o.error;
      failures++;
    } else if (o.decision?.reason === 'store-unavailable') {
      if (onStoreError === 'throw') throw new Error('a failure was turned into a decision under onStoreError: throw');
      if (o.decision.allowed !== (onStoreError === 'allow'))
        throw new Error(`fail policy ${onStoreError} not honoured`);
      failures++;
    }
  }
  return failures;
}

/** What Redis holds for the hot key: the fixed-window count and the log's total. */
export async function heldInRedis(admin: Redis, prefix: string): Promise<{ counter: number; log: number }> {
  const clientKey = `${prefix}{fault|${KEY}}`;
  const counter = (await storedState(admin, clientKey, 'counter'))?.[1] ?? 0;
  const entries = (await admin.lrange(`${clientKey}:log`, 0, -1)).map(Number);
  const log = entries.filter((_, i) => i % 2 === 1).reduce((a, b) => a + b, 0);
  return { counter, log };
}

/** Collects unhandled rejections while a test runs. */
export function watchUnhandledRejections() {
  const seen: unknown[] = [];
  const listener = (reason: unknown) => seen.push(reason);
  process.on('unhandledRejection', listener);
  return {
    seen,
    stop: () => {
      process.off('unhandledRejection', listener);
    },
  };
}
