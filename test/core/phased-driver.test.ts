import { type AlgorithmName, type StoreRequest, toPolicy } from '@sluice/core';
import { createMemoryStore } from '@sluice/memory';
import { describe, expect, it } from 'vitest';
import { START } from './support/meter.js';

// The driver of seed 000 ("Rate Limiting Part 1"): phases offering 1, 2, 5, … 100 requests per
// second against a limiter of 10 per second, each phase sending 10 × rate requests evenly
// over 10 s; a refused request is retried every 10 ms until served, and a phase lasts until
// its last request is served (never less than the 10 s it takes to send them).
const LIMIT_PER_SECOND = 10;
const RATES = [1, 2, 5, 10, 20, 25, 50, 100];
const RETRY_MS = 10;

interface Phase {
  offered: number;
  served: number;
}

const driven = new Map<AlgorithmName, Phase[]>();
const drive = (algorithm: AlgorithmName): Phase[] =>
  driven.get(algorithm) ?? (driven.set(algorithm, simulate(algorithm)).get(algorithm) as Phase[]);

/** Runs the whole driver in virtual time against one memory store; returns each phase's served rate. */
function simulate(algorithm: AlgorithmName): Phase[] {
  const policy = toPolicy({ limit: LIMIT_PER_SECOND, window: '1s', algorithm }, 'driver');
  const store = createMemoryStore({ maxKeys: 1 });
  const request: StoreRequest & { now: number } = {
    namespace: 'driver',
    key: 'server',
    policies: [policy],
    capacities: [policy.capacity],
    cost: 1,
    now: START,
  };
  const allow = (now: number): boolean => {
    request.now = now;
    return store.consumeSync(request).allowed;
  };
  const phases: Phase[] = [];
  let start = START;
  for (const rate of RATES) {
    const total = 10 * rate;
    // Every spacing is a multiple of the retry period, so every waiting request retries on
    // the same 10 ms ticks as the arrivals: one FIFO count of waiting requests is enough.
    const spacing = 1_000 / rate;
    let sent = 0;
    let waiting = 0;
    let lastServed = start;
    for (let now = start; sent < total || waiting > 0; now += RETRY_MS) {
      // The oldest retry first. Once one is refused, every other cost-1 request at this
      // instant is refused too (a refusal changes nothing), so the rest need not ask.
      let open = true;
      while (open && waiting > 0) {
        open = allow(now);
        if (open) {
          waiting--;
          lastServed = now;
        }
      }
      if (sent < total && now === start + sent * spacing) {
        sent++;
        if (open && allow(now)) lastServed = now;
        else waiting++;
      }
    }
    const durationMs = Math.max(total * spacing, lastServed - start);
    phases.push({ offered: rate, served: total / (durationMs / 1_000) });
    start += durationMs;
  }
  return phases;
}

describe('the phased driver of seed 000 in virtual time', () => {
  it.each(['token-bucket', 'leaky-bucket', 'gcra', 'fixed-window', 'sliding-window-log'] as const)(
    '%s serves min(offered, 10) requests per second in every phase, within 10 %',
    (algorithm) => {
      for (const { offered, served } of drive(algorithm)) {
        const expected = Math.min(offered, LIMIT_PER_SECOND);
        // Tolerance 10 %: a phase lasts at least 10 s, i.e. at least 100 requests at the limit.
        // What one phase inherits from the last (a full bucket, or one window's budget: at most
        // 10 requests) and the 10 ms retry period can move its count by about 10 requests.
        expect(Math.abs(served - expected) / expected, `offered ${offered}/s, served ${served}/s`).toBeLessThanOrEqual(
          0.1,
        );
      }
    },
  );

  it('sliding-window-counter serves min(offered, 9): at saturation a window admits L − 1, within 10 %', () => {
    // While the previous window holds any request its weighted share stays above 0 until the
    // window's last ms, so with the exact (unrounded) estimate a window that follows a busy one
    // never reaches L: under saturation the counter settles at L − 1 per window.
    for (const { offered, served } of drive('sliding-window-counter')) {
      const expected = Math.min(offered, LIMIT_PER_SECOND - 1);
      expect(Math.abs(served - expected) / expected, `offered ${offered}/s, served ${served}/s`).toBeLessThanOrEqual(
        0.1,
      );
    }
  });

  it('below the limit every algorithm serves each request the moment it arrives', () => {
    for (const algorithm of [
      'token-bucket',
      'gcra',
      'fixed-window',
      'sliding-window-log',
      'sliding-window-counter',
    ] as const) {
      const below = drive(algorithm).filter((p) => p.offered < LIMIT_PER_SECOND);
      expect(below.map((p) => p.served)).toEqual([1, 2, 5]);
    }
  });

  it('the buckets: only the first saturated phase gains, by the one full bucket it inherits', () => {
    // The 10/s phase leaves the bucket full (10 tokens); the 20/s phase then needs 190 refills
    // of 100 ms for its 200 requests, 19 s. Every later phase starts from the empty bucket the
    // one before left behind, so it runs at exactly the refill rate.
    for (const algorithm of ['token-bucket', 'leaky-bucket', 'gcra'] as const) {
      expect(drive(algorithm).map((p) => p.served)).toEqual([1, 2, 5, 10, 200 / 19, 10, 10, 10]);
    }
  });
});
