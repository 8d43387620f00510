import type { ClientCounts } from './client-counts.js';

/**
 * Reads new and idle clients' counts in one exchange per event-loop turn (`reconcile`, which
 * batches per slot as a sync does): a burst of first requests costs a few calls, not one each.
 * A client asked for twice before its read lands waits for the same read. The promise resolves
 * once the counts have been read from Redis, or could not be.
 */
export function createFirstReads(
  reconcile: (targets: ClientCounts[]) => Promise<void>,
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
        reconcile(targets)
          .catch(() => {})
          .finally(() => {
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
