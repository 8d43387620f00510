import { parseRules } from '@sluice/rules';
import { createDecisionServer, type DecisionServer } from '@sluice/server';
import { afterEach, describe, expect, it } from 'vitest';
import { parseServeArgs } from '../../packages/server/src/cli-args.js';
import { manualClock } from '../helpers/clock.js';
import { createEnvoyClient } from '../helpers/envoy-client.js';

const rules = parseRules(`
domain: d
descriptors:
  - key: k
    rate_limit: { unit: hour, requests_per_unit: 2 }
`);
const quietLog = { line() {}, warn() {} };
const request = { domain: 'd', descriptors: [{ entries: [{ key: 'k', value: 'v' }] }] };

describe("the service's shadow mode (envoyproxy/ratelimit's SHADOW_MODE)", () => {
  let server: DecisionServer | undefined;
  let envoy: ReturnType<typeof createEnvoyClient> | undefined;
  afterEach(async () => {
    envoy?.close();
    await server?.close();
  });

  const start = async (shadowMode: boolean) => {
    server = createDecisionServer({
      rules,
      grpcPort: 0,
      httpPort: 0,
      host: '127.0.0.1',
      headers: { standard: 'draft-6' },
      shadowMode,
      clock: manualClock(1_700_000_000_000),
      log: quietLog,
    });
    const { grpcPort, httpPort } = await server.listen();
    envoy = createEnvoyClient(`127.0.0.1:${grpcPort}`);
    return { ask: envoy.shouldRateLimit, httpPort };
  };

  it('answers OK what the rules refuse, the status saying OVER_LIMIT, and charges nothing for it', async () => {
    const { ask, httpPort } = await start(true);
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push(await ask(request));
    expect(answers.map((a) => a.overall_code)).toEqual(['OK', 'OK', 'OK', 'OK']);
    expect(answers.map((a) => a.statuses?.[0]?.code)).toEqual(['OK', 'OK', 'OVER_LIMIT', 'OVER_LIMIT']);
    expect(answers.map((a) => a.statuses?.[0]?.limit_remaining)).toEqual([1, 0, 0, 0]);
    // Passed, so no Retry-After, though the fields say none remain.
    const headers = (answers[3]?.response_headers_to_add ?? []).map((h) => h.key);
    expect(headers).toContain('RateLimit-Remaining');
    expect(headers).not.toContain('Retry-After');
    // /json answers 200 as well.
    const json = await fetch(`http://127.0.0.1:${httpPort}/json`, { method: 'POST', body: JSON.stringify(request) });
    expect(json.status).toBe(200);
    expect(await json.json()).toMatchObject({ overallCode: 'OK', statuses: [{ code: 'OVER_LIMIT' }] });
    const metrics = await (await fetch(`http://127.0.0.1:${httpPort}/metrics`)).text();
    expect(metrics).toMatch(/sluice_service_calls_total\{transport="grpc",result="shadow"\} 2/);
    expect(metrics).toMatch(/sluice_service_calls_total\{transport="http",result="shadow"\} 1/);
  });

  it('refuses as usual when off', async () => {
    const { ask } = await start(false);
    const codes = [];
    for (let i = 0; i < 3; i++) codes.push((await ask(request)).overall_code);
    expect(codes).toEqual(['OK', 'OK', 'OVER_LIMIT']);
  });

  it('is --shadow-mode to sluice serve, off unless given, and a boolean to createDecisionServer', () => {
    expect(parseServeArgs(['--rules', 'rules.yaml'])).toMatchObject({ shadowMode: false });
    expect(parseServeArgs(['--rules', 'rules.yaml', '--shadow-mode'])).toMatchObject({ shadowMode: true });
    expect(() => createDecisionServer({ rules, shadowMode: 'yes' as unknown as boolean, log: quietLog })).toThrow(
      expect.objectContaining({
        code: 'ERR_SLUICE_INVALID_SERVER_OPTION',
        message: expect.stringContaining('shadowMode'),
      }),
    );
  });
});
