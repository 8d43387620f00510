import { parseRules } from '@sluice/rules';
import { createDecisionServer, createServiceClient } from '@sluice/server';
import { describe, expect, it } from 'vitest';

const rules = parseRules(
  'domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: minute, requests_per_unit: 1 }\n',
);
const quietLog = { line() {}, warn() {} };

describe('createDecisionServer', () => {
  it.each([
    [{ rules: undefined }, 'ERR_SLUICE_INVALID_SERVER_OPTION', '`rules`'],
    [{ rules, grpcPort: 70_000 }, 'ERR_SLUICE_INVALID_SERVER_OPTION', '`grpcPort`'],
    [{ rules, httpPort: -1 }, 'ERR_SLUICE_INVALID_SERVER_OPTION', '`httpPort`'],
    [{ rules, storeTimeoutMs: 0 }, 'ERR_SLUICE_INVALID_SERVER_OPTION', '`storeTimeoutMs`'],
    [{ rules, host: '' }, 'ERR_SLUICE_INVALID_SERVER_OPTION', '`host`'],
    [{ rules, headers: { standard: 'draft-9' } }, 'ERR_SLUICE_INVALID_HEADERS', 'headers.standard'],
    [{ rules, grpcport: 1 }, 'ERR_SLUICE_UNKNOWN_OPTION', '`grpcPort`'],
  ])('refuses %o at construction', (options, code, mention) => {
    expect(() => createDecisionServer(options as never)).toThrow(expect.objectContaining({ code }));
    expect(() => createDecisionServer(options as never)).toThrow(mention);
  });

  it('listens on free ports, answers, and after close() frees them and refuses', async () => {
    const server = createDecisionServer({ rules, grpcPort: 0, httpPort: 0, host: '127.0.0.1', log: quietLog });
    const { grpcPort, httpPort } = await server.listen();
    const body = JSON.stringify({ domain: 'd', descriptors: [{ entries: [{ key: 'k', value: 'v' }] }] });
    expect((await fetch(`http://127.0.0.1:${httpPort}/json`, { method: 'POST', body })).status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${httpPort}/json`, { method: 'POST', body })).status).toBe(429);
    await server.close();
    await expect(fetch(`http://127.0.0.1:${httpPort}/healthcheck`)).rejects.toThrow();
    // Both ports can be bound again at once.
    const again = createDecisionServer({ rules, grpcPort, httpPort, host: '127.0.0.1', log: quietLog });
    await again.listen();
    await again.close();
  });
});

describe('quota_mode over the wire', () => {
  it('refuses only when every quota_mode rule refuses, as the adapters decide', async () => {
    const quota = parseRules(`
domain: d
descriptors:
  - key: a
    quota_mode: true
    policies: [{ name: quota-a, limit: 1, window: 1m, algorithm: fixed-window }]
  - key: b
    quota_mode: true
    policies: [{ name: quota-b, limit: 2, window: 1m, algorithm: fixed-window }]
`);
    const server = createDecisionServer({ rules: quota, grpcPort: 0, httpPort: 0, host: '127.0.0.1', log: quietLog });
    const { httpPort } = await server.listen();
    try {
      const body = JSON.stringify({
        domain: 'd',
        descriptors: [{ entries: [{ key: 'a', value: 'x' }] }, { entries: [{ key: 'b', value: 'x' }] }],
      });
      const ask = async () => (await fetch(`http://127.0.0.1:${httpPort}/json`, { method: 'POST', body })).status;
      expect(await ask()).toBe(200);
      // quota-a is spent, quota-b is not: the request passes.
      expect(await ask()).toBe(200);
      // Now both refuse.
      expect(await ask()).toBe(429);
    } finally {
      await server.close();
    }
  });
});

describe('createServiceClient', () => {
  it.each([
    [{ domain: 'd' }, '`address`'],
    [{ address: '127.0.0.1:1' }, '`domain`'],
    [{ address: '127.0.0.1:1', domain: 'd', deadlineMs: 0 }, '`deadlineMs`'],
  ])('refuses %o at construction', (options, mention) => {
    expect(() => createServiceClient(options as never)).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_SERVER_OPTION' }),
    );
    expect(() => createServiceClient(options as never)).toThrow(mention);
  });

  it('rejects reset and refund, which the protocol lacks', async () => {
    const client = createServiceClient({ address: '127.0.0.1:1', domain: 'd' });
    await expect(client.reset('n', 'k', [])).rejects.toMatchObject({ code: 'ERR_SLUICE_UNSUPPORTED' });
    client.close();
  });
});
