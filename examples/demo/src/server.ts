import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AlgorithmName } from '@sluice/core';
import { rateLimit } from '@sluice/express';
import { createMemoryStore } from '@sluice/memory';
import express from 'express';

export const LIMIT_PER_SECOND = 10;

export interface DemoServer {
  url: URL;
  close(): Promise<void>;
}

/**
 * A real HTTP server on loopback: Express, one sluice limit, the embedded memory store. `clock`
 * replaces the wall clock (tests).
 */
export async function startServer(algorithm: AlgorithmName, clock?: () => number): Promise<DemoServer> {
  const app = express();
  app.use(
    rateLimit({
      limit: LIMIT_PER_SECOND,
      window: '1s',
      algorithm,
      store: createMemoryStore(),
      ...(clock === undefined ? {} : { clock }),
    }),
  );
  app.get('/work', (_req, res) => {
    res.type('text').send('done');
  });
  const server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: new URL(`http://127.0.0.1:${port}/work`),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
