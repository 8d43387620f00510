import type { Server } from 'node:http';
import { createRequire } from 'node:module';
import Router from '@koa/router';
import Koa, { type Middleware } from 'koa';
import { exportOf } from '../../inproc/contender.js';
import {
  body,
  COUNTED_FIELDS,
  countedRateLimitField,
  createFieldCounter,
  FIXED_HEADERS,
  fixedPolicyField,
  fixedRateLimitFields,
  limits,
  REDIS_COUNTED_FIELDS,
  REDIS_ROUND_TRIP,
  type StartApp,
  sluiceLimit,
} from './app.js';
import { benchRedis, isSluiceStore, redisRoundTrip, sluiceStore } from './stores.js';

const [policyName, policyValue] = fixedPolicyField;

const require = createRequire(import.meta.url);
const koaRatelimit = require('koa-ratelimit') as (options: Record<string, unknown>) => Middleware;

export const startKoa: StartApp = async (setup, port) => {
  const app = new Koa();
  let close: () => void | Promise<void> = () => {};
  const { max, windowMs } = limits(setup.mode);
  if (isSluiceStore(setup.variant)) {
    const rateLimit = await exportOf<(o: object) => Middleware>('@sluice/koa', 'rateLimit');
    const store = await sluiceStore(setup);
    app.use(rateLimit({ ...sluiceLimit(setup.mode), store: store.store }));
    close = store.close;
  } else if (setup.variant === FIXED_HEADERS) {
    app.use((ctx, next) => {
      for (const [name, value] of fixedRateLimitFields) ctx.res.setHeader(name, value);
      return next();
    });
  } else if (setup.variant === COUNTED_FIELDS) {
    const count = createFieldCounter();
    app.use((ctx, next) => {
      ctx.res.setHeader(policyName, policyValue);
      ctx.res.setHeader('RateLimit', count(ctx.ip));
      return next();
    });
  } else if (setup.variant === REDIS_ROUND_TRIP) {
    const { roundTrip, close: closeClient } = await redisRoundTrip(setup);
    app.use(async (ctx, next) => {
      await roundTrip(ctx.ip);
      return next();
    });
    close = closeClient;
  } else if (setup.variant === REDIS_COUNTED_FIELDS) {
    const { roundTrip, close: closeClient } = await redisRoundTrip(setup);
    app.use(async (ctx, next) => {
      const used = await roundTrip(ctx.ip);
      ctx.res.setHeader(policyName, policyValue);
      ctx.res.setHeader('RateLimit', countedRateLimitField(used));
      return next();
    });
    close = closeClient;
  } else if (setup.variant === 'koa-ratelimit:memory') {
    app.use(koaRatelimit({ driver: 'memory', db: new Map(), duration: windowMs, max }));
  } else if (setup.variant === 'koa-ratelimit:redis') {
    const client = benchRedis(setup);
    app.use(koaRatelimit({ driver: 'redis', db: client, duration: windowMs, max }));
    close = () => client.disconnect();
  } else if (setup.variant !== 'bare') {
    throw new Error(`unknown koa variant ${setup.variant}`);
  }
  const router = new Router();
  router.get('/', (ctx) => {
    ctx.body = body;
  });
  app.use(router.routes());
  const server = await new Promise<Server>((resolve) => {
    const listening = app.listen(port, '127.0.0.1', () => resolve(listening));
  });
  return async () => {
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
    await close();
  };
};
