import type { ClientCounts } from './client-counts.js';

export interface FirstReads {
  /** Resolves once the client's counts have been read from Redis, or could not be. */
  read(counts: ClientCounts): Promise<void>;
  /** True while the client's read is on the way. */
  pending(counts: ClientCounts): boolean;
}

/**
 * Reads new and idle clients' counts in one exchange per event-loop turn (`reconcile`, which
 * batches per slot as a sync does): a burst of first requests costs a few calls, not one each.
 * A client asked for twice before its read lands waits for the same read.
 */
export function createFirstReads(reconcile: (targets: ClientCounts[]) => Promise<void>): FirstReads {
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
            for (const target of targets) {
              target.stale = false;
              loading.delete(target);
            }
            resolve();
          });
      });
    });
    return batchRead;
  };

  return {
    read(counts) {
      let read = loading.get(counts);
      if (read === undefined) {
        read = readSoon(counts);
        loading.set(counts, read);
      }
      return read;
    },
    pending: (counts) => loading.has(counts),
  };
}
