import { createServer } from 'node:http';
import { createApp as fromExpressRateLimit } from './from-express-rate-limit.js';
import { createApp as fromFastifyRateLimit } from './from-fastify-rate-limit.js';
import { createApp as fromKoaRatelimit } from './from-koa-ratelimit.js';
import { createApp as fromRateLimiterFlexible } from './from-rate-limiter-flexible.js';

// One port per guide's app, on loopback.
fromExpressRateLimit().listen(3001, '127.0.0.1');
await (await fromFastifyRateLimit()).listen({ port: 3002, host: '127.0.0.1' });
fromRateLimiterFlexible().listen(3003, '127.0.0.1');
createServer(fromKoaRatelimit().callback()).listen(3004, '127.0.0.1');
console.log(
  'express-rate-limit → :3001, @fastify/rate-limit → :3002, rate-limiter-flexible → :3003, koa-ratelimit → :3004',
);
