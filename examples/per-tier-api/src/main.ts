import { ipKey, type PolicyOptions, rateLimit } from '@sluice/express';
import express from 'express';

type Plan = 'anonymous' | 'free' | 'pro';

interface Account {
  id: string;
  plan: Plan;
}

declare global {
  namespace Express {
    interface Request {
      account?: Account;
    }
  }
}

// Each plan has its own limits *and* windows, and counts separately: sluice keeps one limiter
// per distinct policy set. Return these same arrays for every request rather than building new
// ones, so each request finds its plan's limiter at once.
const plans: Record<Plan, PolicyOptions[]> = {
  anonymous: [{ name: 'anonymous', limit: 10, window: '1m' }],
  free: [
    { name: 'free-minute', limit: 60, window: '1m' },
    { name: 'free-day', limit: 1_000, window: '1d' },
  ],
  pro: [
    { name: 'pro-second', limit: 20, window: '1s', algorithm: 'gcra', burst: 40 },
    { name: 'pro-day', limit: 100_000, window: '1d' },
  ],
};

// Stands in for a real lookup of API keys.
const accounts = new Map<string, Account>([
  ['demo-free-key', { id: 'acme', plan: 'free' }],
  ['demo-pro-key', { id: 'globex', plan: 'pro' }],
]);

const app = express();

app.use((req, _res, next) => {
  const apiKey = req.get('x-api-key');
  const account = apiKey === undefined ? undefined : accounts.get(apiKey);
  if (account !== undefined) req.account = account;
  next();
});

app.use(
  rateLimit({
    // After auth: count per account; anonymous callers per IP (IPv6 per /56).
    key: (req) => (req.account ? `account:${req.account.id}` : `ip:${ipKey(req.ip) ?? 'unknown'}`),
    policies: (req) => plans[req.account?.plan ?? 'anonymous'],
    // An export is ten times the work of a lookup.
    cost: (req) => (req.path.startsWith('/export') ? 10 : 1),
    // Internal health checks are neither counted nor limited.
    skip: (req) => req.path === '/health',
    headers: { standard: 'draft-11', legacy: true },
  }),
);

app.get('/health', (_req, res) => {
  res.json({ ok: true });
});
app.get('/items', (req, res) => {
  res.json({ plan: req.account?.plan ?? 'anonymous', rateLimit: req.rateLimit });
});
app.get('/export', (req, res) => {
  res.json({ plan: req.account?.plan ?? 'anonymous', remaining: req.rateLimit?.remaining });
});

const port = Number(process.env.PORT ?? 3000);
app.listen(port, '127.0.0.1', () => {
  console.log(
    `per-tier-api on http://127.0.0.1:${port} — try: curl -i -H 'x-api-key: demo-pro-key' http://127.0.0.1:${port}/items`,
  );
});
