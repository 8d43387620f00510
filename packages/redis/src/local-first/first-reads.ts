import type { ClientCounts } from './client-counts.js';

/**
 * Reads new and idle clients' counts in one exchange per event-loop turn (`reconcile`, which
 * batches per slot as a sync does): a burst of first requests costs a few calls, not one each.
 * A client asked for twice before its read lands waits for the same read. The promise resolves
 * once the counts have been read from Redis, or could not be. Each call of an exchange is
 * bounded by `boundMs`, but a burst's calls go a few at a time, so on a slow Redis the whole
 * exchange took several bounds (10,000 new clients, each call answered just within 1 s: 2.1 s):
 * no call is sent past `boundMs` (`stopped`), so the read ends within twice it. Its clients are
 * decided once every call sent has settled, never while one is on its way with their counts
 * from before the decision (a redirected one could land after a sync that wrote newer ones).
 */
export function createFirstReads(
  reconcile: (targets: ClientCounts[], stopped: () => boolean) => Promise<void>,
  boundMs: number,
): (counts: ClientCounts) => Promise<void> {
  const loading = new Map<ClientCounts, Promise<void>>();
  let batch: ClientCounts[] = [];
  let batchRead: Promise<void> | undefined;

  const readSoon = (counts: ClientCounts): Promise<void> => {
    batch.push(counts);
    batchRead ??= new Promise((resolve) => {
      setImmediate(() => {
        const targets = batch;
        batch = [];
        batchRead = undefined;
        let past = false;
        const bound = setTimeout(() => {
          past = true;
        }, boundMs);
        reconcile(targets, () => past)
          .catch(() => {})
          .finally(() => {
            clearTimeout(bound);
            for (const target of targets) loading.delete(target);
            resolve();
          });
      });
    });
    return batchRead;
  };

  return (counts) => {
    let read = loading.get(counts);
    if (read === undefined) {
      read = readSoon(counts);
      loading.set(counts, read);
    }
    return read;
  };
}
