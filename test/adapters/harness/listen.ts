import type { RequestListener } from 'node:http';
import { createServer } from 'node:http';
import { onLoopback } from '../helpers.js';
import type { RunningApp } from './types.js';

/** Loopback only: the suite never opens a port to the network. */
export async function listen(
  listener: RequestListener,
  hits: () => number,
  errors: () => unknown[],
  handle?: RunningApp['handle'],
): Promise<RunningApp> {
  const { url, close } = await onLoopback(createServer(listener));
  return { url, hits, errors, ...(handle === undefined ? {} : { handle }), close };
}
