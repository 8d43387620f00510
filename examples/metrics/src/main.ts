import type { AddressInfo } from 'node:net';
import { rateLimit } from '@sluice/express';
import { createMemoryStore } from '@sluice/memory';
import { createPrometheusMetrics } from '@sluice/otel/prometheus';
import express from 'express';
import { summarize } from './summary.js';

// An app with metrics on, driven by a few well-behaved clients and one that is not, then its
// /metrics as Prometheus would scrape it and what an operator reads from it. Bounded in time.
const DEADLINE_MS = 30_000;
const CLIENTS = ['alice', 'bob', 'carol', 'dave'];
const NOISY = 'mallory';

async function main(): Promise<void> {
  setTimeout(() => {
    console.error(`The metrics demo did not finish within ${DEADLINE_MS / 1000} s.`);
    process.exit(1);
  }, DEADLINE_MS).unref();

  const store = createMemoryStore({ maxKeys: 10_000 });
  const prometheus = createPrometheusMetrics({ memoryStores: { main: store } });
  const clientKey = (req: express.Request) => req.get('x-client') ?? 'anonymous';
  const app = express();
  // Served before the limiters, so scrapes are neither limited nor counted.
  app.get('/metrics', async (_req, res) => {
    res.type(prometheus.contentType).send(await prometheus.render());
  });
  app.use(rateLimit({ name: 'api', limit: 20, window: '1m', prefix: 'api', store, key: clientKey }));
  app.post(
    '/login',
    rateLimit({ name: 'login', limit: 3, window: '15m', prefix: 'login', store, key: clientKey }),
    (_req, res) => res.send('ok'),
  );
  app.get('/search', (_req, res) => res.send('ok'));
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const send = (client: string, method: string, path: string) =>
    fetch(`${url}${path}`, { method, headers: { 'x-client': client } }).then((r) => r.status);
  const statuses: number[] = [];
  for (let round = 0; round < 6; round++) {
    for (const client of CLIENTS) statuses.push(await send(client, 'GET', '/search'));
    for (let i = 0; i < 5; i++) statuses.push(await send(NOISY, 'POST', '/login'));
  }
  const refused = statuses.filter((s) => s === 429).length;
  console.log(`Sent ${statuses.length} requests from ${CLIENTS.length + 1} clients: ${refused} got 429.\n`);

  const text = await (await fetch(`${url}/metrics`)).text();
  console.log('GET /metrics (the sluice series, as Prometheus scrapes them):\n');
  console.log(
    text
      .split('\n')
      .filter((line) => line.startsWith('sluice_') && !line.startsWith('sluice_queue_duration'))
      .map((line) => `  ${line}`)
      .join('\n'),
  );
  console.log(`\nWhat an operator reads from it:\n\n${summarize(text)}`);
  await prometheus.disable();
  await new Promise((resolve) => server.close(resolve));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
