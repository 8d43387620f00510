import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

const execFileAsync = promisify(execFile);

// A process whose only pending work is a call to a store that never answers: the timer that
// bounds the call is what keeps the process alive until the fail policy answers. Unreferenced,
// it let the process exit with the call unsettled (exit 13, "unsettled top-level await").
it('a short script awaiting a hung store gets the fail policy’s answer at storeTimeoutMs, not an early exit', async () => {
  const script = `
    import { createLimiter } from '@sluice/core';
    const hung = () => new Promise(() => {});
    const store = { name: 'hung', consume: hung, refund: hung, reset: hung };
    const limiter = createLimiter({ limit: 1, window: '1m', store, storeTimeoutMs: 50, onStoreError: 'allow', logger: { warn() {} } });
    const decision = await limiter.consume('k');
    console.log(decision.allowed, decision.reason);`;
  const args = ['--import', 'tsx', '--conditions=@sluice/source', '--input-type=module', '-e', script];
  const { stdout } = await execFileAsync(process.execPath, args, {
    cwd: fileURLToPath(new URL('../..', import.meta.url)),
  });
  expect(stdout.trim()).toBe('true store-unavailable');
});
