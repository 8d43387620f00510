/** Every loop here is bounded twice: by a deadline and by a count. */
const MAX_OPS = 2e9;
const BATCH = 512;

export type Call = (key: string) => unknown;

/** Awaits each decision before the next, cycling through the keys; returns ops and seconds. */
export async function sequential(call: Call, keys: readonly string[], ms: number) {
  const n = keys.length;
  let i = 0;
  let ops = 0;
  const start = performance.now();
  const deadline = start + ms;
  while (ops < MAX_OPS) {
    for (let j = 0; j < BATCH; j++) {
      try {
        await call(keys[i] as string);
      } catch {
        // A rejected decision (rate-limiter-flexible's deny) is an outcome, counted like any other.
      }
      i = i + 1 === n ? 0 : i + 1;
    }
    ops += BATCH;
    if (performance.now() >= deadline) break;
  }
  return { ops, seconds: (performance.now() - start) / 1000 };
}

/**
 * `workers` async loops, each awaiting back to back. In-process stores settle without ever
 * yielding to the timer queue, so each worker checks the clock itself.
 */
export async function concurrent(call: Call, keys: readonly string[], ms: number, workers: number) {
  const n = keys.length;
  let next = 0;
  let ops = 0;
  let stop = false;
  const start = performance.now();
  const deadline = start + ms;
  const worker = async () => {
    let mine = 0;
    while (!stop && ops < MAX_OPS) {
      const key = keys[next] as string;
      next = next + 1 === n ? 0 : next + 1;
      try {
        await call(key);
      } catch {
        // As above: a rejection is an outcome.
      }
      ops++;
      if ((++mine & 63) === 0 && performance.now() >= deadline) stop = true;
    }
  };
  await Promise.all(Array.from({ length: workers }, worker));
  return { ops, seconds: (performance.now() - start) / 1000 };
}

/** Per-call latency of sequential calls, in µs, for up to `count` calls or `ms`. */
export async function latencies(call: Call, keys: readonly string[], count: number, ms: number) {
  const samples = new Float64Array(count);
  const deadline = performance.now() + ms;
  let taken = 0;
  for (let i = 0; taken < count; i++) {
    const key = keys[i % keys.length] as string;
    const t0 = performance.now();
    try {
      await call(key);
    } catch {
      // As above.
    }
    samples[taken++] = (performance.now() - t0) * 1000;
    if ((taken & 255) === 0 && performance.now() >= deadline) break;
  }
  return samples.subarray(0, taken).sort();
}

/** Calls every key exactly once, `workers` at a time, within `ms`. */
export async function eachOnce(call: Call, keys: readonly string[], workers: number, ms: number) {
  let next = 0;
  const deadline = performance.now() + ms;
  const worker = async () => {
    while (next < keys.length && performance.now() < deadline) {
      try {
        await call(keys[next++] as string);
      } catch {
        // As above.
      }
    }
  };
  await Promise.all(Array.from({ length: workers }, worker));
  if (next < keys.length) throw new Error(`touched only ${next} of ${keys.length} keys within ${ms} ms`);
}
