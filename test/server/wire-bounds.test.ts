import { type ServiceError, status } from '@grpc/grpc-js';
import { parseRules } from '@sluice/rules';
import { createDecisionServer, type DecisionServer } from '@sluice/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnvoyClient } from '../helpers/envoy-client.js';

const rules = parseRules(`
domain: d
descriptors:
  - key: k
    rate_limit: { unit: second, requests_per_unit: 2 }
  - key: big
    policies: [{ name: big, limit: 5000000000, window: 1s }]
`);
const errors: string[] = [];
const log = {
  line(level: string, message: string) {
    if (level === 'error') errors.push(message);
  },
  warn() {},
};
let server: DecisionServer;
let envoy: ReturnType<typeof createEnvoyClient>;
let base: string;

beforeAll(async () => {
  server = createDecisionServer({ rules, grpcPort: 0, httpPort: 0, host: '127.0.0.1', log });
  const { grpcPort, httpPort } = await server.listen();
  envoy = createEnvoyClient(`127.0.0.1:${grpcPort}`);
  base = `http://127.0.0.1:${httpPort}`;
});
afterAll(async () => {
  envoy?.close();
  await server?.close();
});

const postJson = (body: string) => fetch(`${base}/json`, { method: 'POST', body });
const callCount = async (transport: string, result: string): Promise<number> => {
  const text = await (await fetch(`${base}/metrics`)).text();
  const line = text
    .split('\n')
    .find((l) => l.startsWith(`sluice_service_calls_total{transport="${transport}",result="${result}"}`));
  return line === undefined ? 0 : Number(line.split(' ').pop());
};
const DAY_MS = 86_400_000;

describe('an override beyond what a limiter counts exactly', () => {
  it('is a bad request, not an internal error counted as unavailable (10,000,000/DAY got INTERNAL)', async () => {
    const ask = (requests_per_unit: number) =>
      envoy
        .shouldRateLimit({
          domain: 'd',
          descriptors: [
            { entries: [{ key: 'k', value: `range-${process.pid}` }], limit: { requests_per_unit, unit: 'DAY' } },
          ],
        })
        .then(
          (response) => response.overall_code,
          (error: ServiceError) => ({ code: error.code, details: error.details }),
        );
    // limit × window must stay at most 2^49 in core: the largest daily limit passes, one more does not.
    const largest = Math.floor(2 ** 49 / DAY_MS);
    expect(await ask(largest)).toBe('OK');
    const refused = await ask(10_000_000);
    expect(refused).toMatchObject({ code: status.INVALID_ARGUMENT });
    expect((refused as { details: string }).details).toContain(`at most ${largest} per DAY`);
    expect(await ask(largest + 1)).toMatchObject({ code: status.INVALID_ARGUMENT });

    const http = await postJson(
      JSON.stringify({
        domain: 'd',
        descriptors: [
          { entries: [{ key: 'k', value: 'v' }], limit: { requests_per_unit: 4_000_000_000, unit: 'YEAR' } },
        ],
      }),
    );
    expect(http.status).toBe(400);
    expect(await http.json()).toMatchObject({ code: 'INVALID' });
    expect(await callCount('grpc', 'invalid')).toBe(2);
    expect(await callCount('grpc', 'unavailable')).toBe(0);
    expect(errors).toEqual([]);
  });
});

describe('a limit above uint32 on the wire', () => {
  it('is reported as 4294967295, not wrapped (5,000,000,000 read as 705032704 over gRPC)', async () => {
    const request = { domain: 'd', descriptors: [{ entries: [{ key: 'big', value: `big-${process.pid}` }] }] };
    const grpc = await envoy.shouldRateLimit(request);
    expect(grpc.statuses?.[0]?.current_limit?.requests_per_unit).toBe(4_294_967_295);
    expect(grpc.statuses?.[0]?.limit_remaining).toBe(4_294_967_295);
    const json = (await (await postJson(JSON.stringify(request))).json()) as {
      statuses: { currentLimit: { requestsPerUnit: number }; limitRemaining: number }[];
    };
    expect(json.statuses[0]?.currentLimit.requestsPerUnit).toBe(4_294_967_295);
    expect(json.statuses[0]?.limitRemaining).toBe(4_294_967_295);
  });
});

describe('a deeply nested JSON body', () => {
  const deep = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

  it('in an unknown field is ignored, not a 500 (Maximum call stack size exceeded)', async () => {
    const body = `{"domain":"d","descriptors":[{"entries":[{"key":"k","value":"deep-${process.pid}"}]}],"x":${deep(200_000)}}`;
    const response = await postJson(body);
    expect(response.status).toBe(200);
    expect(errors).toEqual([]);
  });

  it('in a known field is a bad request', async () => {
    const response = await postJson(`{"domain":"d","descriptors":[{"entries":${deep(200_000)}}]}`);
    expect(response.status).toBe(400);
    expect(errors).toEqual([]);
  });
});
