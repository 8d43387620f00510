import type { Logger } from '@sluice/core';
import type { ExchangeOutcome } from './sync-exchange.js';

/** Hash slots of a Redis Cluster; a standalone Redis is slot 0. */
export const SLOTS = 16_384;

/**
 * Which hash slots Redis answered for at their last call. A client on a slot whose call failed
 * is limited at `outageShare` while clients on slots that answer go on at full share: on a
 * cluster with one master down, reads of healthy slots must not lift the share of the dead
 * one's clients. The store warns once when the first slot fails and once when the last one
 * answers again, however many calls come and go between.
 */
export function createReachability(outageShare: number, logger: Logger) {
  // One byte per slot: a decision reads its client's with nothing allocated.
  const down = new Uint8Array(SLOTS);
  let downCount = 0;
  /** Calls Redis did not answer, one per slot of an exchange: what an operator alerts on. */
  let failedCalls = 0;

  const clear = (slot: number): void => {
    if (down[slot] === 1) {
      down[slot] = 0;
      downCount--;
    }
  };

  /** Records what an exchange learnt; throws its first failure, if any. */
  const record = ({ answered, failed }: Pick<ExchangeOutcome, 'answered' | 'failed'>): void => {
    const wasDown = downCount > 0;
    for (const slot of answered) if (!failed.has(slot)) clear(slot);
    let first: unknown;
    failedCalls += failed.size;
    for (const [slot, error] of failed) {
      first ??= error;
      if (down[slot] === 0) {
        down[slot] = 1;
        downCount++;
      }
    }
    if (!wasDown && downCount > 0) {
      logger.warn(
        `[sluice] WRN_SLUICE_LOCAL_FIRST_OFFLINE: a local-first sync failed (${String(first)}); each process limits alone at ${outageShare} of each limit until Redis answers.`,
      );
    } else if (wasDown && downCount === 0) {
      logger.warn('[sluice] WRN_SLUICE_LOCAL_FIRST_ONLINE: Redis answers again; local-first counts are reconciled.');
    }
    if (failed.size > 0) throw first;
  };

  /** Whether `slot`'s last call failed. */
  const isDown = (slot: number): boolean => down[slot] === 1;

  /** The share of each capacity a client on `slot` may use now. */
  const shareOf = (slot: number): number => (isDown(slot) ? outageShare : 1);

  /** Whether any slot is down: only then does the store tell which slots still hold clients. */
  const anyDown = (): boolean => downCount > 0;

  /**
   * Forgets the failure of every slot outside `inUse`, the slots that still hold a client: no
   * call goes to a slot without clients, so its failure would never be cleared, and the store
   * would stay in an outage (its next one unannounced). A new client there is read first and
   * finds out again. Nothing is logged: Redis has not answered there.
   */
  const keepOnly = (inUse: { has(slot: number): boolean }): void => {
    for (let slot = 0; slot < SLOTS && downCount > 0; slot++) if (!inUse.has(slot)) clear(slot);
  };

  return {
    record,
    isDown,
    shareOf,
    anyDown,
    keepOnly,
    slotsDown: (): number => downCount,
    failedCalls: (): number => failedCalls,
  };
}
