import { createServer } from 'node:http';
import { createApp as fromExpressRateLimit } from './from-express-rate-limit.js';
import { createApp as fromFastifyRateLimit } from './from-fastify-rate-limit.js';
import { createApp as fromKoaRatelimit } from './from-koa-ratelimit.js';
import { createApp as fromRateLimiterFlexible } from './from-rate-limiter-flexible.js';

// One port per guide's app, on loopback: PORT and the three after it (3001 to 3004 by default).
const port = Number(process.env.PORT ?? 3001);
fromExpressRateLimit().listen(port, '127.0.0.1');
await (await fromFastifyRateLimit()).listen({ port: port + 1, host: '127.0.0.1' });
fromRateLimiterFlexible().listen(port + 2, '127.0.0.1');
createServer(fromKoaRatelimit().callback()).listen(port + 3, '127.0.0.1');
const url = (offset: number) => `http://127.0.0.1:${port + offset}`;
console.log(
  [
    `express-rate-limit    → ${url(0)}  try: curl -i ${url(0)}/api/items`,
    `@fastify/rate-limit   → ${url(1)}  try: curl -i -H 'authorization: Bearer ada' ${url(1)}/search`,
    `rate-limiter-flexible → ${url(2)}  try: curl -i ${url(2)}/export`,
    `koa-ratelimit         → ${url(3)}  try: curl -i ${url(3)}/`,
  ].join('\n'),
);
