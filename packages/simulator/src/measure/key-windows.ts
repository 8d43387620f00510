interface Log {
  at: number[];
  cost: number[];
  head: number;
  sum: number;
}

/** Per key, the (time, cost) of requests inside a sliding window (now − W, now] and their total. */
export class KeyWindows {
  readonly #logs = new Map<string, Log>();
  readonly #windowMs: number;

  constructor(windowMs: number) {
    this.#windowMs = windowMs;
  }

  /** The key's total in (now − W, now]. Times must not go backwards. */
  sumAt(key: string, now: number): number {
    const log = this.#logs.get(key);
    if (log === undefined) return 0;
    while (log.head < log.at.length && (log.at[log.head] as number) <= now - this.#windowMs) {
      log.sum -= log.cost[log.head++] as number;
    }
    // Drop what has left the window now and then, so a long trace does not keep it all.
    if (log.head > 1024 && log.head * 2 > log.at.length) {
      log.at = log.at.slice(log.head);
      log.cost = log.cost.slice(log.head);
      log.head = 0;
    }
    return log.sum;
  }

  add(key: string, at: number, cost: number): void {
    let log = this.#logs.get(key);
    if (log === undefined) {
      log = { at: [], cost: [], head: 0, sum: 0 };
      this.#logs.set(key, log);
    }
    log.at.push(at);
    log.cost.push(cost);
    log.sum += cost;
  }
}
