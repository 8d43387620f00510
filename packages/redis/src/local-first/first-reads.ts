import type { ClientCounts } from './client-counts.js';

/**
 * Reads new and idle clients' counts in one exchange per event-loop turn (`reconcile`, which
 * batches per slot as a sync does): a burst of first requests costs a few calls, not one each.
 * A client asked for twice before its read lands waits for the same read. The promise resolves
 * once the counts have been read from Redis, or could not be, or `boundMs` after the read
 * began: each call of an exchange has that bound, but a burst's calls go a few at a time, so
 * on a slow Redis the whole exchange could take several (10,000 new clients, each call
 * answered just within 1 s: 2.1 s). A client decided before its read lands is decided on what
 * this process knows: the calls of the read not yet sent then are not (`stopped`), and those
 * under way count as a sync's do.
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
        const read = reconcile(targets, () => past);
        // Made after the read's first calls, each bounded by a timer of the same length that
        // gives up a turn later (`withTimeout`): those fire first, so a read of one round of
        // calls that fails ends (its slots taken for down, its clients decided at the outage
        // share) before the bound does.
        const bound = setTimeout(() => {
          setImmediate(() => {
            past = true;
            resolve();
          });
        }, boundMs);
        read
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
