import type { RequestListener, Server } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RunningApp } from './types.js';

/** Loopback only: the suite never opens a port to the network. */
export async function listen(
  listener: RequestListener,
  hits: () => number,
  errors: () => unknown[],
  handle?: RunningApp['handle'],
): Promise<RunningApp> {
  const server: Server = createServer(listener);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    hits,
    errors,
    ...(handle === undefined ? {} : { handle }),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
