import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ServiceError } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnvoyClient } from '../helpers/envoy-client.js';
import { waitFor } from '../helpers/redis-server.js';
import { type ServingSluice, startSluice } from '../helpers/sluice-process.js';

const dir = mkdtempSync(join(tmpdir(), 'sluice-reload-'));
const file = join(dir, 'rules.yaml');
/** An editor's atomic save: write a temporary file, rename it over the old one. */
const save = (text: string) => {
  writeFileSync(`${file}.tmp`, text);
  renameSync(`${file}.tmp`, file);
};
const rules = (limit: number) =>
  `domain: live\ndescriptors:\n  - key: user\n    rate_limit: { name: per-user, unit: hour, requests_per_unit: ${limit} }\n`;
const ask = (value: string) => ({ domain: 'live', descriptors: [{ entries: [{ key: 'user', value }] }] });

let sluice: ServingSluice;
let envoy: ReturnType<typeof createEnvoyClient>;

beforeAll(async () => {
  save(rules(1000));
  sluice = await startSluice(['--rules', dir]);
  envoy = createEnvoyClient(sluice.grpcAddress);
});
afterAll(async () => {
  envoy?.close();
  await sluice?.kill();
  rmSync(dir, { recursive: true, force: true });
});

const limitNow = async (value: string) =>
  (await envoy.shouldRateLimit(ask(value))).statuses?.[0]?.current_limit?.requests_per_unit;

describe('sluice serve reloads its rules under load', () => {
  it('answers every call while the rules change 20 times, then applies the last limit', async () => {
    let running = true;
    const failures: string[] = [];
    let answered = 0;
    const lane = async (n: number) => {
      for (let i = 0; running; i++) {
        try {
          const response = await envoy.shouldRateLimit(ask(`lane-${n}-${i % 50}`));
          if (response.overall_code !== 'OK' && response.overall_code !== 'OVER_LIMIT')
            failures.push(String(response.overall_code));
          answered++;
        } catch (error) {
          failures.push((error as ServiceError).message);
        }
      }
    };
    const lanes = Array.from({ length: 8 }, (_, n) => lane(n));
    for (let version = 1; version <= 20; version++) {
      save(rules(1000 + version));
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await waitFor('the last rules in force', async () => (await limitNow('probe')) === 1020);
    running = false;
    await Promise.all(lanes);
    expect(failures).toEqual([]);
    expect(answered).toBeGreaterThan(100);
  });

  it('keeps each client count across a change of limit', async () => {
    for (let i = 0; i < 3; i++) await envoy.shouldRateLimit(ask('kept'));
    save(rules(4));
    await waitFor('limit 4', async () => (await limitNow('probe-4')) === 4);
    // Three spent before the change, one now: the fourth passes, the fifth does not.
    const fourth = await envoy.shouldRateLimit(ask('kept'));
    expect(fourth.overall_code).toBe('OK');
    expect((await envoy.shouldRateLimit(ask('kept'))).overall_code).toBe('OVER_LIMIT');
  });

  it('keeps the last good rules when an edit is broken, and reports it', async () => {
    save(rules(7));
    await waitFor('limit 7', async () => (await limitNow('probe-7')) === 7);
    save('domain: live\ndescriptors:\n  - key: user\n    rate_limit: { unit: hour, request_per_unit: 1 }\n');
    await waitFor('the error to be logged', async () =>
      sluice.lines.some((l) => l.msg === 'rules not reloaded; keeping the last good set'),
    );
    expect(await limitNow('probe-7b')).toBe(7);
    const metrics = await (await fetch(`${sluice.httpUrl}/metrics`)).text();
    expect(metrics).toMatch(/^sluice_service_config_loads_total\{result="error"\} [1-9]/m);
    expect(metrics).toMatch(/^sluice_service_config_loads_total\{result="success"\} [1-9]/m);
  });
});
