import { describe, expect, it } from 'vitest';
import { createReachability } from '../../packages/redis/src/local-first/reachability.js';

const outcome = (answered: number[], failed: number[]) => ({
  answered: new Set(answered),
  failed: new Map(failed.map((slot) => [slot, new Error(`slot ${slot} down`)])),
});

// One store-wide flag was flipped by every exchange: on a cluster with one master down, each
// read of a healthy slot lifted the outage share of the dead master's clients, and the
// warnings flapped (62 OFFLINE, 61 ONLINE in 3 s).
describe('local-first reachability, per hash slot', () => {
  it('keeps a failed slot at the outage share while other slots answer, with one warning each way', () => {
    const warnings: string[] = [];
    const { record, shareOf } = createReachability(0.5, { warn: (message) => warnings.push(message) });
    expect(() => record(outcome([1], [12_000]))).toThrow('slot 12000 down');
    for (let i = 0; i < 50; i++) record(outcome([i], []));
    expect(() => record(outcome([2], [12_000]))).toThrow();
    expect([shareOf(12_000), shareOf(1), shareOf(2)]).toEqual([0.5, 1, 1]);
    expect(warnings.map((message) => message.split(':')[0])).toEqual(['[sluice] WRN_SLUICE_LOCAL_FIRST_OFFLINE']);
    record(outcome([12_000], []));
    expect(shareOf(12_000)).toBe(1);
    expect(warnings).toHaveLength(2);
    expect(warnings[1]).toContain('WRN_SLUICE_LOCAL_FIRST_ONLINE');
  });

  it('counts a slot with any failed call in one exchange as failed', () => {
    const { record, shareOf } = createReachability(0.25, { warn() {} });
    expect(() => record(outcome([0], [0]))).toThrow();
    expect(shareOf(0)).toBe(0.25);
  });

  // No call goes to a slot without clients: a failed slot whose clients all left stayed down
  // for good, and the next outage went unannounced.
  it('forgets a failed slot no client is on any more, so the next outage is announced', () => {
    const warnings: string[] = [];
    const reachability = createReachability(0.5, { warn: (message) => warnings.push(message) });
    expect(() => reachability.record(outcome([], [1, 2]))).toThrow();
    reachability.record(outcome([1], []));
    expect(reachability.anyDown()).toBe(true);
    reachability.keepOnly(new Set([1, 3]));
    expect([reachability.anyDown(), reachability.shareOf(2)]).toEqual([false, 1]);
    expect(() => reachability.record(outcome([], [3]))).toThrow();
    expect(warnings.filter((message) => message.includes('OFFLINE'))).toHaveLength(2);
  });
});
