import { Agent } from 'node:http';
import { type AlgorithmName, algorithmNames } from '@sluice/core';
import { type PhaseResult, runPhase } from './load-driver.js';
import { describeResponse, phaseTable } from './report.js';
import { LIMIT_PER_SECOND, startServer } from './server.js';

// The phases of the classic token-bucket driver (1 to 100 requests a second against a limit
// of 10), each shortened from 10 s to 3 s so the whole run takes under half a minute. The
// token bucket is that driver's algorithm too; `--algorithm=<name>` tries another.
const OFFERED_PER_SECOND = [1, 2, 5, 10, 20, 25, 50, 100];
const PHASE_MS = 3_000;
const DEADLINE_MS = 55_000;

function algorithmFromArgs(): AlgorithmName {
  const arg = process.argv.slice(2).find((a) => a.startsWith('--algorithm='));
  const name = arg?.slice('--algorithm='.length) ?? 'token-bucket';
  if (!(algorithmNames as readonly string[]).includes(name)) {
    console.error(`Unknown algorithm ${JSON.stringify(name)}; choose one of ${algorithmNames.join(', ')}.`);
    process.exit(2);
  }
  return name as AlgorithmName;
}

async function main(): Promise<void> {
  const algorithm = algorithmFromArgs();
  // A stuck run must still end: the demo is bounded in time as well as in requests.
  setTimeout(() => {
    console.error(`The demo did not finish within ${DEADLINE_MS / 1000} s.`);
    process.exit(1);
  }, DEADLINE_MS).unref();

  const server = await startServer(algorithm);
  const agent = new Agent({ keepAlive: true, maxSockets: 32 });
  const total = OFFERED_PER_SECOND.reduce((sum, rate) => sum + (rate * PHASE_MS) / 1000, 0);
  console.log(
    `sluice demo: Express on the memory store, limit ${LIMIT_PER_SECOND} req/s per client (${algorithm}),\n` +
      `${OFFERED_PER_SECOND.length} phases of ${PHASE_MS / 1000} s at rising offered load, ${total} requests over loopback to ${server.url}\n`,
  );
  const results: PhaseResult[] = [];
  try {
    for (const rate of OFFERED_PER_SECOND) {
      const result = await runPhase(server.url, rate, PHASE_MS, agent);
      results.push(result);
      process.stdout.write(`  phase ${results.length}: offered ${rate}/s, served ${result.served}/${result.sent}\n`);
    }
  } finally {
    agent.destroy();
    await server.close();
  }
  console.log(`\n${phaseTable(results)}\n`);
  console.log(
    `Served follows offered up to the limit, then stays near ${LIMIT_PER_SECOND}/s however much more is offered;\n` +
      'a bucket also passes the burst it saved while load was light. Refused requests spent no quota.\n',
  );
  console.log(describeResponse('A response under the limit', results[0]?.lastServed));
  console.log(describeResponse('A refused response', results.find((r) => r.lastRejected)?.lastRejected));
  const failed = results.reduce((sum, r) => sum + r.failed, 0);
  if (failed > 0) {
    console.error(`\n${failed} requests failed without an HTTP answer.`);
    process.exitCode = 1;
  }
}

await main();
