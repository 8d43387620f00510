import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseItems } from '../adapters/helpers.js';
import { type ExampleProcess, freePort, printedCurl, runExample } from './example-process.js';

interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  body: Record<string, unknown>;
}

/** A GET sent from `localAddress` (any 127.x address), so each client of a test has its own key. */
function get(url: string, localAddress = '127.0.0.1'): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { localAddress, agent: false, timeout: 5_000 }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: JSON.parse(text) }));
    });
    req.on('timeout', () => req.destroy(new Error(`no answer from ${url}`)));
    req.on('error', reject);
    req.end();
  });
}

/**
 * `attempt`, run from a client address of its own until one run falls within one minute: the
 * service's rule counts in a fixed window of a minute, aligned to the clock, and a run across
 * its turn would find its count started again.
 */
async function inOneWindow<T>(addresses: readonly string[], attempt: (address: string) => Promise<T>): Promise<T> {
  for (const address of addresses) {
    const minute = Math.floor(Date.now() / 60_000);
    const result = await attempt(address);
    if (Math.floor(Date.now() / 60_000) === minute) return result;
  }
  throw new Error(`every run crossed the turn of a minute (${addresses.join(', ')})`);
}

/** examples/decision-service: `service`, then `start`, as examples/README.md says. */
describe('example decision-service: an Express app asking `sluice serve` for every decision', () => {
  const started: ExampleProcess[] = [];
  let grpcPort: number;

  /** `start`, pointed at the service: it listens once its client is ready. */
  const startApp = async () => {
    const port = await freePort();
    const app = runExample('decision-service', 'start', {
      // A call the service answers in more than the example's 20 ms, as on a loaded machine,
      // would pass under `onStoreError: 'allow'`: the test gives it 5 s.
      env: { PORT: String(port), SLUICE_ADDRESS: `127.0.0.1:${grpcPort}`, SLUICE_STORE_TIMEOUT_MS: '5000' },
    });
    started.push(app);
    await app.waitFor(/on http:\/\/127\.0\.0\.1:\d+/);
    return { app, url: `http://127.0.0.1:${port}` };
  };

  let first: { app: ExampleProcess; url: string };
  beforeAll(async () => {
    grpcPort = await freePort();
    const httpPort = await freePort();
    const service = runExample('decision-service', 'service', {
      args: ['--grpc-port', String(grpcPort), '--http-port', String(httpPort)],
    });
    started.push(service);
    await service.waitFor(/"msg":"listening"/);
    first = await startApp();
  });
  afterAll(() => Promise.all(started.map((p) => p.stop())));

  it('the printed curl line is limited by the service rule: 5 a minute per client IP', async () => {
    const curl = printedCurl(first.app.output());
    expect(curl).toEqual({ method: 'GET', url: `${first.url}/`, headers: {} });
    const replies = await inOneWindow(['127.0.0.1', '127.0.0.2'], async (address) => {
      const sent: Reply[] = [];
      for (let i = 0; i < 6; i++) sent.push(await get(curl.url, address));
      return sent;
    });
    expect(replies.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 429]);
    expect(replies.map((r) => r.body.remaining).slice(0, 5)).toEqual([4, 3, 2, 1, 0]);
    expect(parseItems(replies[0]?.headers['ratelimit-policy'] as string)).toEqual([
      { name: 'per-ip', params: { q: 5, w: 60 } },
    ]);
    const refused = replies[5] as Reply;
    expect(refused.body['violated-policies']).toEqual(['per-ip']);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
  });

  it('a second app server asking the same service shares its counts', async () => {
    const second = await startApp();
    // A client spends its five on the first app server; the second refuses it.
    const status = await inOneWindow(['127.0.0.5', '127.0.0.6'], async (address) => {
      for (let i = 0; i < 5; i++) await get(`${first.url}/`, address);
      return (await get(`${second.url}/`, address)).status;
    });
    expect(status).toBe(429);
    const fresh = await get(`${second.url}/`, '127.0.0.4');
    expect([fresh.status, fresh.body.remaining]).toEqual([200, 4]);
  });

  it('nothing was decided without the service', () => {
    for (const app of started) {
      expect(app.output()).not.toMatch(/WRN_SLUICE_NO_RULE|WRN_SLUICE_RULE_MISMATCH|WRN_SLUICE_STORE_UNAVAILABLE/);
    }
  });
});
