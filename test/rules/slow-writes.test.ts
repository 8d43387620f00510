import { parseRules, type RuleSet, type RulesError } from '@sluice/rules';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createReloader } from '../../packages/rules/src/reloader.js';

const DEBOUNCE_MS = 20;
const routes = (count: number, limit: number) =>
  `domain: api\ndescriptors:\n${Array.from(
    { length: count },
    (_, i) =>
      `  - key: route\n    value: "GET /r${i}"\n    rate_limit:\n      unit: minute\n      requests_per_unit: ${limit}\n`,
  ).join('')}`;
const limitsOf = (rules: RuleSet) => [rules.rules.length, ...new Set(rules.rules.map((r) => r.policies[0]?.limit))];

/**
 * A rules file and the reloader a watcher makes of it; each write is an event, as `fs.watch`
 * reports it. The clock and the timers are the test's.
 */
function rulesFile(first: string) {
  let onDisk = first;
  const swapped: (number | undefined)[][] = [];
  const errors: RulesError[] = [];
  const textOf = (text: string) => ({ text, build: () => parseRules(text, { source: 'rules.yaml' }) });
  const reloader = createReloader(textOf(onDisk), async () => textOf(onDisk), {
    debounceMs: DEBOUNCE_MS,
    source: 'rules.yaml',
    onReload: (rules) => swapped.push(limitsOf(rules)),
    onError: (error) => errors.push(error),
  });
  return {
    reloader,
    swapped,
    errors,
    write(text: string) {
      onDisk = text;
      reloader.schedule();
    },
  };
}

describe('a reload forced by events that never pause', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('a file written slowly in place is put in force only once whole (a valid cut of it was)', async () => {
    const file = rulesFile(routes(40, 5000));
    const whole = routes(40, 7000);
    // A writer that never pauses a whole debounce: 30 bytes every 10 ms, cut anywhere.
    for (let at = 30; at < whole.length; at += 30) {
      file.write(whole.slice(0, at));
      await vi.advanceTimersByTimeAsync(DEBOUNCE_MS / 2);
    }
    file.write(whole);
    await vi.advanceTimersByTimeAsync(10 * DEBOUNCE_MS);
    expect(file.swapped).toEqual([[40, 7000]]);
    expect(file.errors).toEqual([]);
    expect(limitsOf(file.reloader.watcher.current)).toEqual([40, 7000]);
  });

  it('a change read twice, a delay apart, is put in force however busy the events', async () => {
    const file = rulesFile(routes(2, 1));
    file.write(routes(2, 2));
    // A busy neighbour of the rules file: events every 5 ms, for ever.
    for (let elapsed = 0; elapsed < (10 + 1) * DEBOUNCE_MS; elapsed += 5) {
      file.reloader.schedule();
      await vi.advanceTimersByTimeAsync(5);
    }
    expect(file.swapped).toEqual([[2, 2]]);
  });

  it('a bad file after a good one keeps the good set and is reported once, however busy the events', async () => {
    const file = rulesFile(routes(2, 1));
    file.write(routes(2, 2).replace('minute', 'fortnight'));
    for (let elapsed = 0; elapsed < 40 * DEBOUNCE_MS; elapsed += 5) {
      file.reloader.schedule();
      await vi.advanceTimersByTimeAsync(5);
    }
    expect(file.errors.map((e) => e.code)).toEqual(['ERR_SLUICE_RULES_INVALID_VALUE']);
    expect([limitsOf(file.reloader.watcher.current), file.swapped]).toEqual([[2, 1], []]);
  });
});
