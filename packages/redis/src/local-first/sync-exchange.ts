import { randomUUID } from 'node:crypto';
import type { Policy } from '@sluice/core';
import calculateSlot from 'cluster-key-slot';
import { type RedisClient, untilReady } from '../client.js';
import { applySync, type ClientCounts, ownCount, type PolicyCounts, windowOf } from './client-counts.js';
import { defineSyncScript } from './sync-script.js';

/** Keys per sync call: a slot with more clients takes several calls. */
const KEYS_PER_CALL = 512;
/** A key's arguments in a sync call: its field, total and expiry (see sync-script.ts). */
const ARGS_PER_KEY = 3;

interface Slice {
  client: ClientCounts;
  policy: number;
  window: number;
  sent: [number, number];
}

/** A local-first store's exchange with Redis: its window keys, and the sync of some clients' counts. */
export function createSyncExchange(client: RedisClient, prefix: string) {
  const run = defineSyncScript(client);
  const onCluster = (client as { isCluster?: boolean }).isCluster === true;
  const processId = randomUUID();

  // A window's key names the policy's slot and window length, not its version: a change of
  // limit or algorithm (both count units per window) reads and adds to the same counts, so it
  // never starts a client afresh (SPEC §4). Each version writes a field of its own (`fieldOf`).
  const windowKey = (namespace: string, key: string, policy: Policy, window: number) =>
    `${prefix}lf:{${namespace}|${key}}:${policy.slot}@${policy.windowMs}:${window}`;
  // Two versions in one process (a rules reload) keep counts of their own: each writes its
  // total to a field of its own, where one field would hold whichever wrote last.
  const fieldOf = (policy: Policy) => `${processId}:${policy.version}`;

  /**
   * Writes the targets' totals and reads the fleet's back: one script call per slot (and per
   * 512 keys), all in parallel, each applying what it read to its clients.
   */
  const exchange = async (targets: ClientCounts[], expired: () => boolean): Promise<void> => {
    await untilReady(client);
    // Settled as failed meanwhile: its clients are marked to be written again; leave them so.
    if (expired()) return;
    const bySlot = new Map<number, { keys: string[]; args: string[]; slices: Slice[] }>();
    for (const counts of targets) {
      counts.touched = false;
      counts.policies.forEach((policy, i) => {
        const own = counts.counts[i] as PolicyCounts;
        const window = windowOf(policy, counts.lastNow);
        const sent: [number, number] = [ownCount(own, window), ownCount(own, window - 1)];
        const current = windowKey(counts.namespace, counts.key, policy, window);
        const slot = onCluster ? calculateSlot(current) : 0;
        const call = bySlot.get(slot) ?? { keys: [], args: [], slices: [] };
        bySlot.set(slot, call);
        // A window's count matters until the end of the next one (a sliding counter's previous).
        const ttl = String(2 * policy.windowMs + 1000);
        const field = fieldOf(policy);
        call.keys.push(current, windowKey(counts.namespace, counts.key, policy, window - 1));
        call.args.push(field, String(sent[0]), ttl, field, String(sent[1]), ttl);
        call.slices.push({ client: counts, policy: i, window, sent });
      });
    }
    const calls: Promise<void>[] = [];
    for (const { keys, args, slices } of bySlot.values()) {
      for (let start = 0; start < keys.length; start += KEYS_PER_CALL) {
        const part = slices.slice(start / 2, (start + KEYS_PER_CALL) / 2);
        calls.push(
          run(
            keys.slice(start, start + KEYS_PER_CALL),
            args.slice(start * ARGS_PER_KEY, (start + KEYS_PER_CALL) * ARGS_PER_KEY),
          ).then((sums) => {
            part.forEach(({ client: counts, policy, window, sent }, j) => {
              const policyCounts = counts.counts[policy] as PolicyCounts;
              applySync(
                counts.policies[policy] as Policy,
                policyCounts,
                window,
                [sums[2 * j] as number, sums[2 * j + 1] as number],
                sent,
              );
            });
          }),
        );
      }
    }
    const failed = (await Promise.allSettled(calls)).find((result) => result.status === 'rejected');
    if (failed !== undefined) throw (failed as PromiseRejectedResult).reason;
  };

  return { windowKey, exchange };
}

/**
 * `work`, or a rejection once `ms` have passed; a later failure of `work` is absorbed by the
 * race. `work` is told whether its time is up (`expired`): it must write nothing once the caller
 * has been told it failed, as a DEL sent when a first connection opens late would wipe counts
 * written since.
 */
export function withTimeout(work: (expired: () => boolean) => Promise<unknown>, ms: number): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  let expired = false;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      expired = true;
      reject(new Error(`no reply within ${ms} ms`));
    }, ms);
  });
  return Promise.race([work(() => expired), timeout]).finally(() => clearTimeout(timer));
}
