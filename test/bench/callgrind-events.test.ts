import { describe, expect, it } from 'vitest';
import { collectedEvents } from '../../bench/src/ceiling/callgrind.js';

describe("callgrind's collected events", () => {
  it('reads the instruction count of a plain run', () => {
    const stderr = [
      '==11312== Events    : Ir',
      '==11312== Collected : 128717',
      '==11312== I   refs:      128,717',
    ].join('\n');
    expect(collectedEvents(stderr)).toEqual(new Map([['Ir', 128_717]]));
  });

  it("names each total of the cache simulation's run", () => {
    const stderr = [
      '==10662== Events    : Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw',
      '==10662== Collected : 1883021124 511322410 288190248 8789626 6582696 3932403 64904 69396 761198',
      '==10662== D1  misses:       10,515,099  (  6,582,696 rd +   3,932,403 wr)',
    ].join('\n');
    const events = collectedEvents(stderr);
    expect(events?.get('Ir')).toBe(1_883_021_124);
    expect(events?.get('D1mr')).toBe(6_582_696);
    expect(events?.get('D1mw')).toBe(3_932_403);
    expect(events?.size).toBe(9);
  });

  it('reports nothing for a run that collected nothing, or totals that do not match their names', () => {
    expect(collectedEvents('valgrind: failed to start tool')).toBeUndefined();
    expect(collectedEvents('==1== Events    : Ir D1mr\n==1== Collected : 5')).toBeUndefined();
  });
});
