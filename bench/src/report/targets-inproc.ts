import { CLOCK_FLOOR, GET_SET_FLOOR, LAYOUT_FLOOR, LAYOUT_KEPT_FLOOR } from '../ceiling/floor.js';
import { cheapestScriptId } from '../inproc/cheapest-script-contenders.js';
import { fixed, rate, ratio } from '../lib/format.js';
import { bytesPerKey, type RunResults } from '../results.js';
import {
  atLeast,
  atMost,
  cell,
  isRunOf,
  neighbourSpread,
  over,
  pairSpread,
  type Spread,
  spreadOf,
  spreadShown,
  type TargetCheck,
} from './target-check.js';

const TARGETED = ['gcra', 'sliding-window-counter'] as const;
const SEQ_100K = [100_000, 1] as const;

/** A Redis cell at 100 in flight ÷ a reference cell, each run against the reference's run beside it in the plan. */
const versus = (results: RunResults, contender: string, reference: string): Spread | undefined =>
  neighbourSpread(results.inproc, contender, reference, 100_000, 100);

/**
 * What sluice's three-policy cost ÷ its one-policy cost would read if each further policy cost
 * only what it costs the cheapest script: per round, 1 + (the cheapest script's time per
 * three-policy decision − its time per one-policy decision) ÷ sluice's time per one-policy
 * decision, the cheapest script's runs those nearest sluice's in the plan. The cheapest
 * script's further policies are the least a further policy can cost through sluice's client,
 * so a store as quick as sluice with one policy reads at least this with three.
 */
function withCheapestFurtherPolicies(results: RunResults, sluiceOne: string, cheapestOne: string): Spread | undefined {
  const runsOf = (id: string) =>
    results.inproc.flatMap((r, at) => (isRunOf(r, id, 100_000, 100) && r.opsPerSec ? [{ at, ops: r.opsPerSec }] : []));
  const [three, one] = [runsOf(`${cheapestOne}:3p`), runsOf(cheapestOne)];
  // A round runs a script's cheapest cells within six places of sluice's.
  const nearest = (runs: { at: number; ops: number }[], at: number) =>
    runs.filter((r) => Math.abs(r.at - at) <= 6).sort((a, b) => Math.abs(a.at - at) - Math.abs(b.at - at))[0];
  return spreadOf(
    runsOf(sluiceOne).flatMap(({ at, ops }) => {
      const [c3, c1] = [nearest(three, at), nearest(one, at)];
      return c3 === undefined || c1 === undefined ? [] : [1 + ops * (1 / c3.ops - 1 / c1.ops)];
    }),
  );
}

/** The memory store through `createLimiter`, against the lru-cache floor and, the stretch, express-rate-limit. */
export function memoryTargets(results: RunResults): TargetCheck[] {
  const inproc = results.inproc;
  const lru = 'floor-lru-cache:memory';
  const erl = 'express-rate-limit:memory';
  const paired = (contender: string, reference: string) => pairSpread(inproc, contender, reference)?.median;
  // The Map floor answering with a decision's binding fields: the least any limiter with
  // sluice's API can cost, whatever map bounds its keys. Where it alone misses a goal, no such
  // limiter can meet it.
  const decisionOverLru = paired('floor-decision:memory', lru);
  const decisionOverErl = paired('floor-decision:memory', erl);
  const checks: TargetCheck[] = [];
  for (const algorithm of TARGETED) {
    const id = `sluice:memory:${algorithm}`;
    const floor = pairSpread(inproc, id, lru);
    const stretch = pairSpread(inproc, id, erl);
    checks.push(
      {
        target: `memory ${algorithm} via createLimiter, 100k keys, seq ÷ lru-cache floor`,
        value: floor?.median,
        spread: floor,
        unit: 'ratio',
        goal: '≥ 0.90',
        bound: `the floor is 1.00; a plain Map floor ${ratio(paired('floor-map:memory', lru))}; a Map floor with a decision's binding fields ${ratio(decisionOverLru)}`,
        context: `run alone: sluice ${rate(cell(inproc, id, ...SEQ_100K))}/s, lru-cache floor ${rate(cell(inproc, lru, ...SEQ_100K))}/s`,
        met: atLeast(floor?.median, 0.9),
        boundMisses: atLeast(decisionOverLru, 0.9) === false,
      },
      {
        target: `memory ${algorithm} via createLimiter, 100k keys, seq ÷ express-rate-limit MemoryStore (stretch)`,
        value: stretch?.median,
        spread: stretch,
        unit: 'ratio',
        goal: '≥ 1.00',
        bound: `lru-cache floor ${ratio(paired(lru, erl))}, Map floor ${ratio(paired('floor-map:memory', erl))}, Map floor with a decision's binding fields ${ratio(decisionOverErl)}`,
        context: `run alone: express-rate-limit ${rate(cell(inproc, erl, ...SEQ_100K))}/s, unbounded`,
        met: atLeast(stretch?.median, 1),
        boundMisses: atLeast(decisionOverErl, 1) === false,
      },
    );
  }
  return checks;
}

/**
 * Memory per tracked key at 1M keys, heap and external together, against the lightest peer
 * by the same sum: typed arrays live outside the V8 heap, so state moved into them must still
 * count, and a store that keeps its index there gains nothing by it.
 */
export function heapTargets(results: RunResults): TargetCheck[] {
  const measured = results.heap.filter((h) => bytesPerKey(h) !== undefined);
  const peers = measured.filter((h) => !h.contender.startsWith('sluice'));
  const lightest = peers.sort((a, b) => (bytesPerKey(a) as number) - (bytesPerKey(b) as number))[0];
  return TARGETED.map((algorithm) => {
    const sluice = measured.find((h) => h.contender === `sluice:memory:${algorithm}`);
    const bytes = sluice === undefined ? undefined : bytesPerKey(sluice);
    return {
      target: `heap + external bytes per key at 1M keys, ${algorithm}`,
      value: bytes,
      unit: 'bytes',
      goal: '≤ 96',
      bound: '',
      context: [
        sluice === undefined
          ? ''
          : `heap ${fixed(sluice.heapBytesPerKey, 0)} B + external ${fixed(sluice.externalBytesPerKey, 0)} B`,
        lightest === undefined
          ? ''
          : `lightest peer ${lightest.contender.replace(/:memory$/, '')} ${fixed(bytesPerKey(lightest), 0)} B`,
      ]
        .filter((s) => s !== '')
        .join('; '),
      met: atMost(bytes, 96),
    };
  });
}

/**
 * Redis's time per call of a `redis-benchmark` replay, 16 deep: `INFO commandstats` when the
 * run read it (load changes it little), else Redis's CPU over the calls served.
 */
function redisUs(results: RunResults, command: string): number | undefined {
  const row = replayRow(results, command);
  if (row?.usecPerCall !== undefined) return row.usecPerCall;
  if (row?.opsPerSec === undefined || row.redisCores === undefined) return undefined;
  return (1e6 * row.redisCores) / row.opsPerSec;
}

const replayRow = (results: RunResults, command: string) =>
  results.redisBench.find((r) => r.command === command && r.pipeline === 16);

/** The range of a replay's rounds, for a run of more than one. */
const replaySpread = (results: RunResults, command: string): Spread | undefined => {
  const runs = replayRow(results, command)?.usecPerCallRuns ?? [];
  return runs.length > 1 ? spreadOf(runs) : undefined;
};

/** A replay's figure with its rounds' range, for a run of more than one: `4.58 µs (4.11–7.47)`. */
const replayFigure = (results: RunResults, command: string, us: number): string => {
  const spread = replaySpread(results, command);
  return spread === undefined
    ? `${fixed(us, 2)} µs`
    : `${fixed(us, 2)} µs (${fixed(spread.min, 2)}–${fixed(spread.max, 2)})`;
};

/**
 * How the host's speed moved the goal, round by round: the rounds in which the clock floor
 * alone took more than `goalUs` (there no store deciding on Redis's clock could meet it), and
 * the replay's median over the others. Every round runs each case once, so the n-th run of a
 * case and of the floor are neighbours; the layout floor read 4.98–8.67 µs over the rounds of
 * one run (bench/README.md).
 */
function roundsBeyondClockFloor(results: RunResults, command: string, goalUs: number): string {
  const runs = replayRow(results, command)?.usecPerCallRuns ?? [];
  const floorRuns = replayRow(results, CLOCK_FLOOR)?.usecPerCallRuns ?? [];
  if (runs.length < 2 || floorRuns.length !== runs.length) return '';
  const within = runs.filter((_, round) => (floorRuns[round] as number) <= goalUs);
  const beyond = runs.length - within.length;
  const others = spreadOf(within);
  return `the clock floor above ${fixed(goalUs, 1)} µs in ${beyond} of ${runs.length} rounds${
    others === undefined ? '' : `; in the other ${others.count}, this replay ${fixed(others.median, 2)} µs`
  }`;
}

/**
 * The layout floor each algorithm's replay is read against: the replayed gcra state expires
 * 1 ms after its charge, so its GET nearly always finds nothing; a counter's state lasts a
 * window or two, so its GET finds it and its write keeps the TTL.
 */
const layoutFloorOf: Record<(typeof TARGETED)[number], { row: string; says: string }> = {
  gcra: { row: LAYOUT_FLOOR, says: 'the state expired, as in the replay' },
  'sliding-window-counter': { row: LAYOUT_KEPT_FLOOR, says: 'the state kept and read back, as in the replay' },
};

/** Redis CPU per decision, the cost of three policies, and decisions at 100 in flight. */
export function redisTargets(results: RunResults): TargetCheck[] {
  const inproc = results.inproc;
  const incrUs = redisUs(results, 'INCR (reference)');
  const floorUs = redisUs(results, GET_SET_FLOOR);
  const clockUs = redisUs(results, CLOCK_FLOOR);
  const rlf = cell(inproc, 'rate-limiter-flexible:redis', 100_000, 100);
  const incr = cell(inproc, 'ioredis-incr:redis', 100_000, 100);
  const checks: TargetCheck[] = [];
  for (const algorithm of TARGETED) {
    const us = redisUs(results, `sluice ${algorithm}`);
    const layout = layoutFloorOf[algorithm];
    const layoutUs = redisUs(results, layout.row);
    checks.push({
      target: `Redis CPU per single-policy decision, ${algorithm} (redis-benchmark replay, -P 16)`,
      value: us,
      spread: replaySpread(results, `sluice ${algorithm}`),
      unit: 'µs',
      goal: '≤ 6.0',
      bound: [
        incrUs === undefined ? '' : `INCR ${replayFigure(results, 'INCR (reference)', incrUs)}`,
        floorUs === undefined
          ? ''
          : `a script that only GETs and SETs the string ${replayFigure(results, GET_SET_FLOOR, floorUs)}`,
        clockUs === undefined
          ? ''
          : `one that reads TIME first, as every decision on Redis's clock does, with the state expired as in the replay, ${replayFigure(results, CLOCK_FLOOR, clockUs)}`,
        layoutUs === undefined
          ? ''
          : `one that adds TIME and the state in sluice's layout (${layout.says}), without the policy's figures or arithmetic, ${replayFigure(results, layout.row, layoutUs)}`,
      ]
        .filter((s) => s !== '')
        .join('; '),
      context: roundsBeyondClockFloor(results, `sluice ${algorithm}`, 6),
      met: atMost(us, 6),
      // A decision is one Lua script that reads Redis's clock and reads and writes the client's
      // state (SPEC §4); the clock floor does only that. Where it alone costs more, no such
      // store meets the goal.
      boundMisses: atMost(clockUs, 6) === false,
    });
  }
  for (const algorithm of TARGETED) {
    const id = `sluice:redis:${algorithm}`;
    // Cost is time per decision: 3 policies' cost ÷ 1 policy's is 1 policy's rate ÷ 3 policies'.
    const cost = versus(results, id, `${id}:3p`);
    const cheapest = (encoding: 'binary' | 'text') => {
      const floor = cheapestScriptId(algorithm, encoding);
      return versus(results, floor, `${floor}:3p`);
    };
    const [binary, text] = [cheapest('binary'), cheapest('text')];
    const composite = withCheapestFurtherPolicies(results, id, cheapestScriptId(algorithm, 'binary'));
    const scriptCost = over(
      redisUs(results, `sluice ${algorithm}, 3 policies`),
      redisUs(results, `sluice ${algorithm}`),
    );
    checks.push({
      target: `Redis ${algorithm}: cost of a 3-policy decision ÷ a 1-policy one, 100 in flight`,
      value: cost?.median,
      spread: cost,
      unit: 'ratio',
      goal: '≤ 1.30',
      bound:
        binary === undefined || text === undefined
          ? ''
          : `sluice's store on the cheapest script, 3 ÷ 1: state in binary ${spreadShown(binary)}, in text (sluice's earlier layout) ${spreadShown(text)}${composite === undefined ? '' : `; sluice's one-policy call with the binary script's further policies ${spreadShown(composite)}`}`,
      context: scriptCost === undefined ? '' : `Redis CPU per call, 3 ÷ 1: ${ratio(scriptCost)}`,
      met: atMost(cost?.median, 1.3),
      // The cheapest script with its state in binary is the least a further policy can cost
      // through sluice's client; where even it costs more than the goal, no script meets it.
      boundMisses: atMost(binary?.median, 1.3) === false,
    });
  }
  for (const algorithm of TARGETED) {
    const id = `sluice:redis:${algorithm}`;
    const v = versus(results, id, 'rate-limiter-flexible:redis');
    checks.push({
      target: `Redis ${algorithm}, 100k keys, 100 in flight ÷ rate-limiter-flexible Redis`,
      value: v?.median,
      spread: v,
      unit: 'ratio',
      goal: '≥ 1.50',
      bound: incr === undefined ? '' : `one ioredis INCR per decision ${ratio(over(incr, rlf))}`,
      context: `rate-limiter-flexible ${rate(rlf)}/s`,
      met: atLeast(v?.median, 1.5),
    });
  }
  return checks;
}

/** What watching decisions costs on the memory store (issue 14). */
export function watchTargets(results: RunResults): TargetCheck[] {
  // Cost is CPU time per decision: watched ÷ unwatched is the unwatched run's rate ÷ its partner's.
  const watchCost = (id: string) => pairSpread(results.inproc, 'sluice:memory:gcra', id);
  const subscriberCost = watchCost('sluice:memory:gcra:subscriber');
  const metricsCost = watchCost('sluice:memory:gcra:metrics');
  return [
    {
      target: 'memory gcra, 100k keys, seq: cost with enableMetrics ÷ cost with nobody watching',
      value: metricsCost?.median,
      spread: metricsCost,
      unit: 'ratio',
      goal: '≤ 1.15',
      bound: subscriberCost === undefined ? '' : `a subscriber that does nothing ${ratio(subscriberCost.median)}`,
      context: '',
      met: atMost(metricsCost?.median, 1.15),
    },
  ];
}
