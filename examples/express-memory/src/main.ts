import { rateLimit } from '@sluice/express';
import { createMemoryStore } from '@sluice/memory';
import express from 'express';

const app = express();
// Behind a reverse proxy, trust exactly it (a hop count or its address), never `true`:
// app.set('trust proxy', 1);

// One store for both limiters: each limiter has its own namespace in it, so they never share counts.
const store = createMemoryStore({ maxKeys: 50_000 });

// Every route: 100 requests a minute per client IP (IPv6 clients per /56).
app.use(rateLimit({ limit: 100, window: '1m', store }));

// The login route adds its own, stricter limits on top; its RateLimit items are appended.
const loginLimit = rateLimit({
  policies: [
    { name: 'login-burst', limit: 5, window: '1m' },
    { name: 'login-daily', limit: 50, window: '1d' },
  ],
  store,
});

app.post('/login', loginLimit, (req, res) => {
  res.json({ ok: true, attemptsLeft: req.rateLimit?.remaining });
});

app.get('/', (req, res) => {
  res.json({ hello: 'world', rateLimit: req.rateLimit });
});

const port = Number(process.env.PORT ?? 3000);
app.listen(port, '127.0.0.1', () => {
  console.log(`express-memory on http://127.0.0.1:${port} — try: curl -i -X POST http://127.0.0.1:${port}/login`);
});
