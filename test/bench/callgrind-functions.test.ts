import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { functionCosts } from '../../bench/src/ceiling/callgrind-functions.js';

let dir: string | undefined;
afterEach(() => {
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

/** Writes a perf map and a callgrind dump, then reads the dump's costs per function. */
function costsOf(perfMap: string[], dump: string[]): Map<string, number[]> {
  dir = mkdtempSync(join(tmpdir(), 'sluice-callgrind-functions-'));
  writeFileSync(join(dir, 'perf.map'), `${perfMap.join('\n')}\n`);
  writeFileSync(join(dir, 'cg'), `${dump.join('\n')}\n`);
  return functionCosts(join(dir, 'cg'), join(dir, 'perf.map'), 1).costs;
}

describe("server-instructions' function names", () => {
  it("names compiled code by the perf map's latest code at its address", () => {
    // V8 freed `startUp`'s code and compiled `parseLater` inside it: the later line holds 0x1030.
    const costs = costsOf(
      [
        '1000 100 JS:*startUp file:///x/packages/core/dist/a.js:1:1',
        '2000 50 JS:*second file:///x/packages/core/dist/b.js:1:1',
        '1020 40 JS:*parseLater file:///x/packages/core/dist/c.js:2:2',
        '3000 50 JS:*third file:///x/packages/core/dist/d.js:3:3',
        '4000 50 JS:*fourth file:///x/packages/core/dist/e.js:4:4',
      ],
      ['events: Ir', 'fn=(1) 0x1030', '0 10', 'fn=(2) 0x1070', '0 5', 'fn=(3) 0x4010', '0 7', 'fn=(4) 0x9999', '0 1'],
    );
    expect(Object.fromEntries(costs)).toEqual({
      'parseLater core/dist/c.js:2:2': [10],
      'startUp core/dist/a.js:1:1': [5],
      'fourth core/dist/e.js:4:4': [7],
      'compiled code not in the perf map': [1],
    });
  });

  it("counts a function's own costs, not what its calls cost", () => {
    const costs = costsOf(
      ['1000 100 JS:*caller file:///x/packages/core/dist/a.js:1:1'],
      ['events: Ir', 'fn=(1) 0x1000', '0 10', 'cfn=(2) 0x5000', 'calls=1 0', '0 400', '1 3'],
    );
    expect(costs.get('caller core/dist/a.js:1:1')).toEqual([13]);
  });
});
