import { writeFileSync } from 'node:fs';
import { finish, packageFile, spawnNode } from '../lib/children.js';
import { median } from '../lib/stats.js';
import { CASES } from './cases.js';

/**
 * Limiter creation cost (issue 13): 200 per-route limiters, created as an app does at
 * start-up, each case in fresh processes (median of 3), and the memory they keep. Writes
 * `results/creation.md`. Run: `pnpm --filter @sluice/bench run creation`.
 */
const COUNT = 200;
const RUNS = 3;

interface Sample {
  ms: number;
  heapBytes: number;
  externalBytes: number;
}

const mb = (bytes: number) => (bytes / 1e6).toFixed(bytes < 1e6 ? 2 : 1);

const rows: string[] = [];
for (const name of Object.keys(CASES)) {
  const samples: Sample[] = [];
  for (let run = 0; run < RUNS; run++) {
    const child = spawnNode(1, 'creation/worker.ts', ['--case', name, '--count', String(COUNT)], ['--expose-gc']);
    const { code, stdout, stderr } = await finish(child, 120_000);
    if (code !== 0) throw new Error(`${name}: ${stderr}`);
    samples.push(JSON.parse(stdout) as Sample);
  }
  const ms = median(samples.map((s) => s.ms));
  const heap = median(samples.map((s) => s.heapBytes));
  const external = median(samples.map((s) => s.externalBytes));
  rows.push(
    `| ${name} | ${ms.toFixed(1)} ms | ${(ms / COUNT).toFixed(3)} ms | ${mb(heap)} MB | ${mb(external)} MB | ${((heap + external) / COUNT / 1e3).toFixed(1)} kB |`,
  );
  console.error(`[creation] ${rows.at(-1)}`);
}

const report = `# Limiter creation cost

${COUNT} limiters created in a row, as an app creates per-route limiters at start-up; median of
${RUNS} fresh processes per case, on ${new Date().toISOString().slice(0, 10)}. Memory is what the
limiters keep after a full GC: the V8 heap, and outside it the typed arrays of each memory
store's index, which grow as clients arrive (at most \`maxKeys\`, 100 000 by default).

| case | ${COUNT} limiters | each | heap kept | outside the heap | kept per limiter |
| ---- | ---: | ---: | ---: | ---: | ---: |
${rows.join('\n')}
`;
writeFileSync(packageFile('results/creation.md'), report);
console.log(report);
