import { rateLimit } from '@sluice/express';
import { createServiceClient } from '@sluice/server';
import express from 'express';

// Every app server pointing at the same service shares its counts; the service holds them
// (in memory here, or in Redis with `--redis`) and its rules decide.
const store = createServiceClient({ address: process.env.SLUICE_ADDRESS ?? '127.0.0.1:8081', domain: 'api' });

const app = express();
app.use(
  rateLimit({
    store,
    // The name is the descriptor the rules limit; the figures, kept equal to the rule's, are
    // what the headers advertise.
    policies: [{ name: 'per-ip', limit: 5, window: '1m' }],
    // If the service is down or slow, serve rather than fail, and give up on it after 20 ms
    // (Envoy's own timeout; SLUICE_STORE_TIMEOUT_MS sets another).
    onStoreError: 'allow',
    storeTimeoutMs: Number(process.env.SLUICE_STORE_TIMEOUT_MS ?? 20),
  }),
);
app.get('/', (req, res) => {
  res.json({ remaining: req.rateLimit?.remaining });
});

// The first decision would otherwise pay for connecting and for the first call's one-time work,
// more than the 20 ms above; a service that does not answer is warned about, and the app serves
// anyway.
await store.ready().catch((error: Error) => console.warn(error.message));
const port = Number(process.env.PORT ?? 3000);
const server = app.listen(port, '127.0.0.1', () => {
  console.log(`decision-service app on http://127.0.0.1:${port} — try: curl -i http://127.0.0.1:${port}/`);
});
process.once('SIGTERM', () => {
  server.close();
  void store.close();
});
