import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { describe, expect, it } from 'vitest';
import { runToEnd } from './example-process.js';

/** examples/metrics (`pnpm demo:metrics`): drives an app with metrics on and prints them. */
describe('example metrics: an operator reads the refusals from /metrics', () => {
  it('prints the scrape and the table the traffic it sent implies', async () => {
    const { code, output } = await runToEnd('metrics', 'start');
    expect(code, output).toBe(0);
    // 6 rounds of 4 searches and 5 logins from mallory: 30 logins against the app-wide 20 a
    // minute (10 refused there), and the 20 it let through against the login limit of 3.
    expect(output).toContain('Sent 54 requests from 5 clients: 27 got 429.');

    const scrape = output
      .split('\n')
      .filter((line) => line.startsWith('  sluice_'))
      .map((line) => line.trim())
      .join('\n');
    const decisions = parsePrometheusTextFormat(`${scrape}\n`).find((f) => f.name === 'sluice_decisions_total');
    const byLabels = Object.fromEntries(
      (decisions?.metrics ?? []).map((m) => [
        `${m.labels?.sluice_limiter}/${m.labels?.sluice_policy}/${m.labels?.sluice_result}`,
        Number(m.value),
      ]),
    );
    expect(byLabels).toEqual({
      'api/api/allowed': 44,
      'api/api/limited': 10,
      'login/login/allowed': 3,
      'login/login/limited': 17,
    });
    expect(scrape).toMatch(/^sluice_memory_keys\{sluice_store="main"\} 5$/m);

    const table = output.slice(output.indexOf('What an operator reads from it'));
    expect(table).toMatch(/api\/api\s+54\s+44\s+10\s+19 %/);
    expect(table).toMatch(/login\/login\s+20\s+3\s+17\s+85 %/);
    expect(table).toContain('store errors: 0 (no fail-open passes)');
  });
});
