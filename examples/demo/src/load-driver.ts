import { type Agent, type IncomingHttpHeaders, request } from 'node:http';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';

const REQUEST_TIMEOUT_MS = 5_000;

export interface Sample {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface PhaseResult {
  offeredPerSecond: number;
  durationMs: number;
  sent: number;
  served: number;
  rejected: number;
  failed: number;
  lastServed: Sample | undefined;
  lastRejected: Sample | undefined;
}

/**
 * Offers `offeredPerSecond` requests a second for `durationMs`, on a fixed schedule from the
 * phase start so a slow response never delays the next request (an open loop, like clients
 * that do not wait for each other). Returns once every response is in.
 */
export async function runPhase(
  url: URL,
  offeredPerSecond: number,
  durationMs: number,
  agent: Agent,
): Promise<PhaseResult> {
  const count = Math.round((offeredPerSecond * durationMs) / 1000);
  const started = performance.now();
  const pending: Promise<Sample | undefined>[] = [];
  for (let i = 0; i < count; i++) {
    const dueMs = started + (i * 1000) / offeredPerSecond - performance.now();
    if (dueMs > 0) await sleep(dueMs);
    pending.push(send(url, agent));
  }
  const samples = await Promise.all(pending);
  const result: PhaseResult = {
    offeredPerSecond,
    durationMs,
    sent: count,
    served: 0,
    rejected: 0,
    failed: 0,
    lastServed: undefined,
    lastRejected: undefined,
  };
  for (const sample of samples) {
    if (sample?.status === 200) {
      result.served++;
      result.lastServed = sample;
    } else if (sample?.status === 429) {
      result.rejected++;
      result.lastRejected = sample;
    } else {
      result.failed++;
    }
  }
  return result;
}

/** Resolves `undefined` on a network error or timeout: counted as failed, never thrown. */
function send(url: URL, agent: Agent): Promise<Sample | undefined> {
  return new Promise((resolve) => {
    const req = request(url, { agent }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      res.on('error', () => resolve(undefined));
    });
    req.setTimeout(REQUEST_TIMEOUT_MS, () => req.destroy());
    req.on('error', () => resolve(undefined));
    req.end();
  });
}
