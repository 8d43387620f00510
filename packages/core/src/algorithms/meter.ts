import type { Policy, PolicyOutcome } from '../types.js';
import type { Values } from './algorithm.js';

/**
 * The outcome of a meter that holds `held` units of work when asked for `cost` (a unit is
 * 1/L ms; a token is W of them), written into `into`: gcra's TAT ahead of now and a leaky
 * bucket's water are this one quantity, each kept in a state of its own. Allowed iff the work
 * after the charge overruns the capacity by no more than `maxDelayMs` (queue mode), the charge
 * then held back by the overrun. Returns the units held after an allowed charge, or -1 for a
 * refusal, which charges nothing.
 */
export function meterInto(into: PolicyOutcome, held: number, policy: Policy, capacity: number, cost: number): number {
  const { windowMs, limit } = policy;
  const after = held + cost * windowMs;
  const overrun = after - capacity * windowMs;
  if (overrun <= policy.maxDelayMs * limit) {
    into.allowed = true;
    into.resetAfterMs = Math.ceil(after / limit);
    into.retryAfterMs = 0;
    // Nothing left once the charge overruns (queue mode); else what the capacity still holds,
    // without `Math.max` on every decision (some 6 instructions). Not `-overrun`, which is -0
    // for a charge that takes the last unit.
    if (overrun > 0) {
      into.remaining = 0;
      into.delayMs = Math.ceil(overrun / limit);
    } else {
      into.remaining = Math.floor((capacity * windowMs - after) / windowMs);
      into.delayMs = 0;
    }
    return after;
  }
  into.allowed = false;
  into.remaining = Math.max(0, Math.floor((capacity * windowMs - held) / windowMs));
  into.resetAfterMs = Math.ceil(held / limit);
  into.retryAfterMs = Math.ceil((overrun - policy.maxDelayMs * limit) / limit);
  into.delayMs = 0;
  return -1;
}

/**
 * Work of `held` units written at `since`, drained at `limit` units a ms to `now`: a leaky
 * bucket's water, a continuous token bucket's missing tokens. Compared before multiplying, so
 * the product never leaves the exact integer range. A clock behind `since` finds the work not
 * yet drained that far back, as gcra finds its TAT further ahead: a state written after is
 * then never drained twice by a clock that steps back and forward (two servers' clocks apart).
 */
export function drainedTo(held: number, since: number, limit: number, now: number): number {
  const elapsed = now - since;
  if (elapsed <= 0) return held - elapsed * limit;
  return elapsed >= Math.ceil(held / limit) ? 0 : held - elapsed * limit;
}

/**
 * Writes a bucket's state after a charge of `added` units: `after`, the work held as of `now`
 * (read by `drainedTo`) with the charge, as of `now`; or, where the clock stands behind the
 * state's time, the state's own work with the charge, as of that time. Written as of `now`,
 * the state's time went back before the charges that wrote it, which a refund dated by one of
 * them then took for no write since (`stillHeld`) and gave back whole though it had refilled.
 * The two read alike at every time: behind its time, a state holds what has not drained that
 * far back.
 */
export function writeCharge(
  values: Values,
  at: number,
  fresh: boolean,
  after: number,
  added: number,
  now: number,
): void {
  if (!fresh && (values[at + 1] as number) > now) {
    values[at] = (values[at] as number) + added;
    return;
  }
  values[at] = after;
  values[at + 1] = now;
}

/**
 * What a charge of `units` made at `chargedAt` or later, by `chargedBy`, still holds in a bucket
 * that drains or refills `limit` units a ms, whose state was last written at `since` and is read
 * at `at`: a refund gives back no more. Nothing written after the charge began (`since` at or
 * before `chargedAt`), the bucket holds all of it still, less what has drained since, which
 * reading the state took from the whole already. A later write may be a later request's
 * charge, which found the bucket drained (or full) but for this one, and what this one added
 * was repaid then: the most it can still hold is its units less what may have drained (or
 * refilled) before that write, and, for a write after the charge's span, to `at`, the later of
 * the state's time and the clock (a clock stepped back behind the state has seen that time).
 */
const stillHeld = (
  units: number,
  limit: number,
  since: number,
  at: number,
  chargedAt: number,
  chargedBy: number,
): number => {
  if (since <= chargedAt) return units;
  return Math.max(0, units - ((since <= chargedBy ? since : at) - chargedAt) * limit);
};

/**
 * A continuous bucket's state `[held, since]` after a refund of `cost` units charged at
 * `chargedAt` or later, by `chargedBy`: what the charge still holds (`stillHeld`) taken off the
 * state as of its own time, which the refund leaves as it was. Refilling goes on from there the
 * same, and a refund is no write a later one takes for a charge after its own (refunds of
 * several charges made together each gave back less than the one before). The state is read at
 * the later of its time and the clock (a clock stepped back behind the state has seen that time).
 * The token bucket's missing tokens and the leaky bucket's water alike.
 */
export function meterRefunded(
  state: readonly number[],
  policy: Policy,
  cost: number,
  now: number,
  chargedAt: number,
  chargedBy: number,
): number[] {
  const since = state[1] as number;
  const at = Math.max(now, since);
  const held = stillHeld(cost * policy.windowMs, policy.limit, since, at, chargedAt, chargedBy);
  return [Math.max(0, (state[0] as number) - held), since];
}
