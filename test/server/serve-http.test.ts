import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServingSluice, startSluice } from '../helpers/sluice-process.js';

const rules = new URL('./fixtures/edge.yaml', import.meta.url).pathname;
let sluice: ServingSluice;

beforeAll(async () => {
  sluice = await startSluice(['--rules', rules]);
});
afterAll(async () => {
  await sluice?.kill();
});

const postJson = (body: unknown) =>
  fetch(`${sluice.httpUrl}/json`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

describe('sluice serve over HTTP, as envoyproxy/ratelimit answers', () => {
  it('POST /json answers 200 with the response in proto3 JSON, then 429 over the limit', async () => {
    const request = {
      domain: 'edge',
      descriptors: [{ entries: [{ key: 'remote_address', value: `json-${process.pid}` }] }],
    };
    const first = await postJson(request);
    expect(first.status).toBe(200);
    expect(first.headers.get('content-type')).toBe('application/json');
    const body = (await first.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      overallCode: 'OK',
      statuses: [{ code: 'OK', currentLimit: { name: 'per-ip', requestsPerUnit: 3, unit: 'HOUR' }, limitRemaining: 2 }],
    });
    const reset = (body.statuses as { durationUntilReset: string }[])[0]?.durationUntilReset;
    expect(reset).toMatch(/^\d+(\.\d{3})?s$/);
    await postJson(request);
    await postJson(request);
    const over = await postJson(request);
    expect(over.status).toBe(429);
    const refused = (await over.json()) as { overallCode: string; statuses: Record<string, unknown>[] };
    expect(refused.overallCode).toBe('OVER_LIMIT');
    // proto3 JSON leaves a zero out, as Go's protojson does.
    expect(refused.statuses[0]).not.toHaveProperty('limitRemaining');
  });

  it('accepts proto field names (snake_case) and a hits_addend', async () => {
    const response = await postJson({
      domain: 'edge',
      hits_addend: 2,
      descriptors: [{ entries: [{ key: 'remote_address', value: `snake-${process.pid}` }] }],
    });
    expect(response.status).toBe(200);
    expect(((await response.json()) as { statuses: { limitRemaining: number }[] }).statuses[0]?.limitRemaining).toBe(1);
  });

  // Regression: a descriptor's hits_addend (a UInt64Value) past 4,294,967,295 was a bad request,
  // which Envoy lets through by default: a large enough cost stepped around every limit.
  it("a descriptor's hits_addend past uint32 is a cost that can never pass, charging nothing", async () => {
    const entries = [{ key: 'remote_address', value: `uint64-${process.pid}` }];
    for (const value of ['4294967296', '18446744073709551615', `${'0'.repeat(30)}4294967296`, 5_000_000_000, 2 ** 63]) {
      const response = await postJson({ domain: 'edge', descriptors: [{ entries, hits_addend: { value } }] });
      expect([value, response.status]).toEqual([value, 429]);
    }
    for (const tooLarge of ['18446744073709551616', '1'.repeat(21), '9'.repeat(1_000_000)]) {
      const response = await postJson({ domain: 'edge', descriptors: [{ entries, hits_addend: tooLarge }] });
      expect(response.status).toBe(400);
    }
    const after = await postJson({ domain: 'edge', descriptors: [{ entries }] });
    expect(((await after.json()) as { statuses: { limitRemaining: number }[] }).statuses[0]?.limitRemaining).toBe(2);
  });

  it('answers 400 for a bad request and 413 for an oversized body, counting nothing', async () => {
    const typo = [{ key: 'remote_address', value: `typo-${process.pid}` }];
    for (const bad of [
      '{not json',
      { descriptors: [] },
      { domain: 'edge', descriptors: [] },
      { domain: 'edge', descriptors: [{ entries: [{ value: 'a' }] }] },
      // A misspelt wrapper is refused, never read as the present 0 that looks without counting.
      { domain: 'edge', descriptors: [{ entries: typo, hitsAddend: { valu: 2 } }] },
      { domain: 'edge', descriptors: [{ entries: typo, hitsAddend: { value: 'two' } }] },
      // A member under both its names: camelCase was read, whichever came last.
      { domain: 'edge', hits_addend: 3, hitsAddend: 1, descriptors: [{ entries: typo }] },
      { domain: 'edge', descriptors: [{ entries: typo, hitsAddend: 1, hits_addend: 3 }] },
      {
        domain: 'edge',
        descriptors: [{ entries: typo, limit: { requests_per_unit: 5, requestsPerUnit: 50, unit: 'HOUR' } }],
      },
    ]) {
      const response = await postJson(bad);
      expect(response.status).toBe(400);
      expect(((await response.json()) as { code: string }).code).toBe('INVALID');
    }
    const after = await postJson({ domain: 'edge', descriptors: [{ entries: typo }] });
    expect(((await after.json()) as { statuses: { limitRemaining: number }[] }).statuses[0]?.limitRemaining).toBe(2);
    expect((await postJson('x'.repeat(2 * 1024 * 1024))).status).toBe(413);
  });

  it('GET /healthcheck says OK, an unknown path is 404 and a wrong method 405', async () => {
    const health = await fetch(`${sluice.httpUrl}/healthcheck`);
    expect(health.status).toBe(200);
    expect(await health.text()).toBe('OK');
    expect((await fetch(`${sluice.httpUrl}/nothing`)).status).toBe(404);
    expect((await fetch(`${sluice.httpUrl}/json`)).status).toBe(405);
  });

  // A 405 named no method, and HEAD, which some health checkers send, was refused as one.
  it('a 405 names the methods its path takes, and HEAD is answered as GET without a body', async () => {
    const refused = await fetch(`${sluice.httpUrl}/json`);
    expect([refused.status, refused.headers.get('allow')]).toEqual([405, 'POST']);
    const wrong = await fetch(`${sluice.httpUrl}/healthcheck`, { method: 'DELETE' });
    expect([wrong.status, wrong.headers.get('allow')]).toEqual([405, 'GET, HEAD']);
    for (const path of ['/healthcheck', '/metrics']) {
      const head = await fetch(`${sluice.httpUrl}${path}`, { method: 'HEAD' });
      expect([path, head.status, await head.text()]).toEqual([path, 200, '']);
    }
  });

  it('GET /metrics exposes the decisions and the calls answered in Prometheus text', async () => {
    const response = await fetch(`${sluice.httpUrl}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/plain');
    const text = await response.text();
    expect(text).toMatch(/^sluice_service_calls_total\{transport="http",result="ok"\} [1-9]\d*$/m);
    expect(text).toMatch(/^sluice_service_calls_total\{transport="http",result="over_limit"\} [1-9]\d*$/m);
    expect(text).toMatch(/^sluice_service_calls_total\{transport="http",result="invalid"\} [1-9]\d*$/m);
    // The rules' decisions, from core's events through @sluice/otel: one series per rule,
    // policy and result, never one per client.
    expect(text).toMatch(
      /^sluice_decisions_total\{sluice_limiter="r\.[^"]+",sluice_policy="per-ip",sluice_result="allowed"\} [1-9]\d*$/m,
    );
    expect(text).toMatch(
      /^sluice_decisions_total\{sluice_limiter="r\.[^"]+",sluice_policy="per-ip",sluice_result="limited"\} [1-9]\d*$/m,
    );
    expect(text).not.toContain('json-');
    expect(text).toMatch(/^sluice_memory_keys\{sluice_store="memory"\} [1-9]\d*$/m);
    expect(text).toMatch(/^sluice_service_store_up 1$/m);
    expect(text).toContain('sluice_service_call_duration_seconds_bucket');
  });
});
