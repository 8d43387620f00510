import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { createEnvoyClient } from '../helpers/envoy-client.js';
import { waitFor } from '../helpers/redis-server.js';
import { startSluice } from '../helpers/sluice-process.js';

// A reader of the log that goes away (a log shipper restarting, `sluice serve | head`) closed
// stderr under the service: the next line failed with EPIPE, which nothing handled, and the
// service exited mid-traffic. The lines are lost; the service goes on.
it('sluice serve goes on serving when the reader of its log goes away', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-log-reader-'));
  const save = (limit: number) => {
    const file = join(dir, 'rules.yaml');
    writeFileSync(
      `${file}.tmp`,
      `domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: hour, requests_per_unit: ${limit} }\n`,
    );
    renameSync(`${file}.tmp`, file);
  };
  save(5);
  const sluice = await startSluice(['--rules', dir]);
  const envoy = createEnvoyClient(sluice.grpcAddress);
  const limitNow = async () =>
    (await envoy.shouldRateLimit({ domain: 'd', descriptors: [{ entries: [{ key: 'k', value: 'v' }] }] })).statuses?.[0]
      ?.current_limit?.requests_per_unit;
  try {
    sluice.child.stderr?.destroy();
    // Each reload writes a line to the closed stderr.
    for (const limit of [6, 7]) {
      save(limit);
      await waitFor(`limit ${limit} in force`, async () => (await limitNow()) === limit);
    }
    expect((await fetch(`${sluice.httpUrl}/healthcheck`)).status).toBe(200);
    expect(sluice.child.exitCode).toBeNull();
  } finally {
    envoy.close();
    await sluice.kill();
    rmSync(dir, { recursive: true, force: true });
  }
});
