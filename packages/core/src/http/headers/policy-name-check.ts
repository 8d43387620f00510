import type { WarnOnce } from '../warnings.js';

/**
 * How many header writers send each draft-11 policy name, and a count of the names that more
 * than one sends. Only a writer whose name another sends can put one name twice on a response,
 * so only such a writer notes, per request, the names sent (`namesOnRequest`); in most apps no
 * name is shared and writing costs no look-up.
 */
const senders = new Map<string, number>();
let sharedNames = 0;
const namesOnRequest = new WeakMap<object, Set<string>>();
/**
 * Names are never forgotten, so their number is bounded: per-request tiers (`policies(req)`)
 * can make a name per request. Past the bound a new name goes unchecked.
 */
const MAX_CHECKED_NAMES = 1024;

function claimNames(names: readonly string[]): void {
  for (const name of names) {
    if (!senders.has(name) && senders.size >= MAX_CHECKED_NAMES) continue;
    const count = (senders.get(name) ?? 0) + 1;
    senders.set(name, count);
    if (count === 2) sharedNames++;
  }
}

/** Notes `names` as sent on `request`, and warns of one sent there before. */
function noteNames(request: object, names: readonly string[], warn: WarnOnce | undefined): void {
  let sent = namesOnRequest.get(request);
  if (sent === undefined) {
    sent = new Set();
    namesOnRequest.set(request, sent);
  }
  for (const name of names) {
    if (sent.has(name)) {
      warn?.(
        'WRN_SLUICE_DUPLICATE_POLICY_NAME',
        `policy ${JSON.stringify(name)} was sent twice in one response's RateLimit fields, by two limiters or two rules, so clients cannot tell the two items apart. Give each policy its own \`name\` (in rules, \`rate_limit.name\` or the policy's \`name\`).`,
        name,
      );
    }
    sent.add(name);
  }
}

/**
 * Claims a writer's draft-11 policy names; the check it returns, run on each request the writer
 * writes on, warns once per name that reaches one response twice.
 */
export function createNameCheck(names: readonly string[], warn: WarnOnce | undefined): (request: object) => void {
  claimNames(names);
  /** Whether another writer sends one of these names, as of `sharedNames` = `seenShared`. */
  let sharesName = false;
  let seenShared = 0;
  return (request) => {
    if (sharedNames === 0) return;
    if (seenShared !== sharedNames) {
      seenShared = sharedNames;
      sharesName = names.some((name) => (senders.get(name) ?? 0) > 1);
    }
    if (sharesName) noteNames(request, names, warn);
  };
}
