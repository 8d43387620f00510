import type { Server } from 'node:http';
import express, { type RequestHandler } from 'express';
import { rateLimit } from 'express-rate-limit';
import { RedisStore } from 'rate-limit-redis';
import { RateLimiterMemory, RateLimiterRedis } from 'rate-limiter-flexible';
import { exportOf } from '../../inproc/contender.js';
import {
  type AppSetup,
  body,
  COUNTED_FIELDS,
  countedRateLimitField,
  createFieldCounter,
  FIXED_HEADERS,
  fixedPolicyField,
  fixedRateLimitFields,
  limits,
  MEMORY_BESIDE_IDLE_CLIENT,
  REDIS_COUNTED_FIELDS,
  REDIS_ROUND_TRIP,
  type StartApp,
  sluiceLimit,
} from './app.js';
import { benchRedis, redisRoundTrip, sluiceStore } from './stores.js';

const [policyName, policyValue] = fixedPolicyField;

type Closer = () => void | Promise<void>;

/** The limiter middleware a variant names; each peer with its documented defaults. */
async function limiterFor(setup: AppSetup): Promise<[RequestHandler, Closer]> {
  const { max, windowMs } = limits(setup.mode);
  switch (setup.variant) {
    case 'sluice:memory':
    case 'sluice:redis':
    case MEMORY_BESIDE_IDLE_CLIENT: {
      const sluiceRateLimit = await exportOf<(o: object) => RequestHandler>('@sluice/express', 'rateLimit');
      const { store, close } = await sluiceStore(setup);
      return [sluiceRateLimit({ ...sluiceLimit(setup.mode), store }), close];
    }
    case FIXED_HEADERS: {
      const fields: RequestHandler = (_req, res, next) => {
        for (const [name, value] of fixedRateLimitFields) res.setHeader(name, value);
        next();
      };
      return [fields, () => {}];
    }
    case COUNTED_FIELDS: {
      const count = createFieldCounter();
      const fields: RequestHandler = (req, res, next) => {
        res.setHeader(policyName, policyValue);
        res.setHeader('RateLimit', count(req.ip ?? ''));
        next();
      };
      return [fields, () => {}];
    }
    case REDIS_ROUND_TRIP: {
      const { roundTrip, close } = await redisRoundTrip(setup);
      const middleware: RequestHandler = (req, _res, next) => {
        roundTrip(req.ip ?? '').then(() => next(), next);
      };
      return [middleware, close];
    }
    case REDIS_COUNTED_FIELDS: {
      const { roundTrip, close } = await redisRoundTrip(setup);
      const middleware: RequestHandler = (req, res, next) => {
        roundTrip(req.ip ?? '').then((used) => {
          res.setHeader(policyName, policyValue);
          res.setHeader('RateLimit', countedRateLimitField(used));
          next();
        }, next);
      };
      return [middleware, close];
    }
    case 'express-rate-limit:memory':
      return [rateLimit({ windowMs, limit: max }), () => {}];
    case 'express-rate-limit:redis': {
      const client = benchRedis(setup);
      const store = new RedisStore({
        sendCommand: (command: string, ...args: string[]) => client.call(command, ...args) as never,
      });
      return [rateLimit({ windowMs, limit: max, store }), () => client.disconnect()];
    }
    case 'rate-limiter-flexible:memory':
    case 'rate-limiter-flexible:redis': {
      const client = setup.variant.endsWith('redis') ? benchRedis(setup) : undefined;
      const options = { points: max, duration: windowMs / 1000 };
      const limiter = client
        ? new RateLimiterRedis({ ...options, storeClient: client })
        : new RateLimiterMemory(options);
      // The minimal middleware of rate-limiter-flexible's documentation: no headers.
      const middleware: RequestHandler = (req, res, next) => {
        limiter.consume(req.ip ?? '').then(
          () => next(),
          () => res.status(429).send('Too Many Requests'),
        );
      };
      return [middleware, () => client?.disconnect()];
    }
    default:
      throw new Error(`unknown express variant ${setup.variant}`);
  }
}

export const startExpress: StartApp = async (setup, port) => {
  const app = express();
  let close: Closer = () => {};
  if (setup.variant !== 'bare') {
    const [middleware, closer] = await limiterFor(setup);
    app.use(middleware);
    close = closer;
  }
  app.get('/', (_req, res) => {
    res.json(body);
  });
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
