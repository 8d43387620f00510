import { algorithmNames } from '@sluice/core';
import { cheapestScriptId, isCheapestScript } from '../inproc/cheapest-script-contenders.js';
import { floorLabels } from '../inproc/floor-contenders.js';
import { rulesLabels } from '../inproc/rules-contenders.js';
import { fixed, percent, rate, ratio } from '../lib/format.js';
import type { InprocResult, RunResults } from '../results.js';
import { table } from './table.js';
import { cell, isRunOf } from './target-check.js';

const COLUMNS: Array<[number, number, 'pass' | 'deny', string]> = [
  [100_000, 1, 'pass', '100k keys, seq'],
  [100_000, 100, 'pass', '100k keys, c=100'],
  [1, 1, 'pass', 'hot key, seq'],
  [1, 100, 'pass', 'hot key, c=100'],
  [100_000, 1, 'deny', 'rejected, 100k, seq'],
  [100_000, 100, 'deny', 'rejected, 100k, c=100'],
  [1, 1, 'deny', 'rejected, hot, seq'],
  [1, 100, 'deny', 'rejected, hot, c=100'],
];

const seqP99 = (results: readonly InprocResult[], contender: string) =>
  results.find((r) => isRunOf(r, contender, 100_000, 1))?.p99Us;

const nameOf = (id: string) => {
  const floor = floorLabels[id] ?? rulesLabels[id];
  if (floor !== undefined) return floor;
  const [family, store, algorithm, variant] = id.split(':');
  const suffix = variant === '3p' ? ' (3 policies)' : variant === 'ap' ? ' (auto-pipelining client)' : '';
  if (family === 'sluice') return `sluice \`createLimiter\` ${algorithm}${suffix}`;
  return `${family} (${store})`;
};

/**
 * Decisions per second for one store, one row per contender, with each row's ratio to a
 * reference peer in the reference's own column.
 */
export function inprocTable(
  results: RunResults,
  store: 'memory' | 'redis',
  reference: string,
  refColumn: number,
): string {
  const measured = new Set(results.inproc.filter((r) => r.store === store).map((r) => r.contender));
  const sluiceIds = algorithmNames.flatMap((a) => [`sluice:${store}:${a}`, `sluice:${store}:${a}:ap`]);
  // The cheapest scripts' cells are the three-policy table's.
  const others = [...measured].filter((id) => !id.startsWith('sluice') && !isCheapestScript(id));
  const ids = [...sluiceIds, ...others].filter((id) => measured.has(id));
  const [refKeys, refConcurrency, refMode, refLabel] = COLUMNS[refColumn] as (typeof COLUMNS)[number];
  const refOps = cell(results.inproc, reference, refKeys, refConcurrency, refMode);
  const rows = ids.map((id) => {
    const unavailable = results.inproc.find((r) => r.contender === id && r.unavailable)?.unavailable;
    const extra = store === 'redis' ? ['–'] : [];
    if (unavailable !== undefined) return [nameOf(id), ...COLUMNS.map(() => '–'), '–', '–', ...extra];
    const own = cell(results.inproc, id, refKeys, refConcurrency, refMode);
    const row = [
      nameOf(id),
      ...COLUMNS.map(([keys, concurrency, mode]) => rate(cell(results.inproc, id, keys, concurrency, mode))),
      own !== undefined && refOps !== undefined ? `${ratio(own / refOps)}×` : '–',
      fixed(seqP99(results.inproc, id), 1),
    ];
    if (store === 'redis') row.push(percent(ceilingShare(results, id)));
    return row;
  });
  const headers = [
    'contender',
    ...COLUMNS.map((c) => c[3]),
    `× ${nameOf(reference)} (${refLabel})`,
    'seq p99 µs (100k)',
    ...(store === 'redis' ? ["c=100 as share of the script's Redis ceiling"] : []),
  ];
  return table(headers, rows);
}

/**
 * The cost of stacking three policies in one decision, next to one policy of the same
 * algorithm; on Redis also sluice's store on the cheapest script in each encoding.
 */
export function policyTable(results: RunResults): string {
  const rows: string[][] = [];
  const row = (label: string, id: string, concurrency: number) => {
    const one = cell(results.inproc, id, 100_000, concurrency);
    const three = cell(results.inproc, `${id}:3p`, 100_000, concurrency);
    if (three !== undefined) rows.push([label, rate(one), rate(three), one && three ? ratio(one / three) : '–']);
  };
  for (const store of ['memory', 'redis'] as const) {
    for (const algorithm of ['gcra', 'sliding-window-counter'] as const) {
      const concurrency = store === 'redis' ? 100 : 1;
      const where = `${store}, ${algorithm}, ${concurrency === 1 ? 'seq' : 'c=100'}`;
      row(where, `sluice:${store}:${algorithm}`, concurrency);
      if (store === 'memory') continue;
      for (const encoding of ['binary', 'text'] as const) {
        row(`${where}, the cheapest script, state in ${encoding}`, cheapestScriptId(algorithm, encoding), concurrency);
      }
    }
  }
  return table(['store, algorithm', '1 policy /s', '3 policies /s', 'cost ratio (3 ÷ 1)'], rows);
}

/**
 * A sluice Redis contender's 100k-key, c=100 rate over what redis-benchmark reached with the
 * same script 16 deep: near 100 % means Redis itself, not the client, is the limit.
 */
function ceilingShare(results: RunResults, id: string): number | undefined {
  const [family, , algorithm, variant] = id.split(':');
  if (family !== 'sluice' || variant === '3p') return undefined;
  const ceiling = results.redisBench.find((r) => r.command === `sluice ${algorithm}` && r.pipeline === 16)?.opsPerSec;
  const own = cell(results.inproc, id, 100_000, 100);
  return own !== undefined && ceiling !== undefined ? own / ceiling : undefined;
}
