import { SluiceError } from './errors.js';
import { PEER_OPTION_NAMES } from './peer-option-names.js';

/** The options of one policy, given at the top level of a single-policy limiter or inside `policies`. */
export const POLICY_OPTION_NAMES = [
  'limit',
  'window',
  'algorithm',
  'burst',
  'queue',
  'refillAmount',
  'refillInterval',
  'name',
] as const;

/** Every option `createLimiter` understands; adapters extend this list with their own. */
export const LIMITER_OPTION_NAMES: readonly string[] = [
  ...POLICY_OPTION_NAMES,
  'policies',
  'store',
  'clock',
  'prefix',
  'throttle',
  'onStoreError',
  'storeTimeoutMs',
  'logger',
];

/** `options` without the entries given as `undefined`, which mean left out. */
export const givenOptions = (options: object): Record<string, unknown> =>
  Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined));

/**
 * The `names` `options` holds as `undefined`: options of another mode (`rules: config.rules`,
 * unset), no mistake, to count as known beside the mode's own.
 */
export const unsetOptions = (options: object, names: Iterable<string>): string[] =>
  [...names].filter((name) => Object.hasOwn(options, name) && (options as Record<string, unknown>)[name] === undefined);

/** The options of the adapters' `rateLimit` that `createLimiter` does not take. */
export const HTTP_ONLY_OPTIONS = [
  'key',
  'cost',
  'skip',
  'headers',
  'ipv6Subnet',
  'maxQueued',
  'onLimited',
  'message',
  'statusCode',
  'skipFailedRequests',
  'skipSuccessfulRequests',
  'requestWasSuccessful',
  'onExceeding',
  'onExceeded',
  'allowList',
  'ban',
] as const;

/**
 * `createLimiter`'s hints: a peer's name for one of its options, or the adapters' option given
 * to it (`ban`, `key`), which would otherwise read as a bare "Unknown option".
 */
export const LIMITER_HINTS: Readonly<Record<string, string>> = {
  ...PEER_OPTION_NAMES,
  ...Object.fromEntries(
    HTTP_ONLY_OPTIONS.map((name) => [
      name,
      `the \`${name}\` of the Express, Koa and Fastify adapters' \`rateLimit\`, which \`createLimiter\` does not take`,
    ]),
  ),
  cost: '`consume(key, { cost })`',
};

/**
 * The first known option `options` reads through its prototype chain rather than holds (a
 * prototype's, a class's getter): the checks of names see own keys only, so it would be used
 * unseen, and a copy or JSON of the options would not hold it.
 */
export const inheritedOption = (options: object, known: Iterable<string>): string | undefined => {
  for (const key of known) if (!Object.hasOwn(options, key) && key in options) return key;
  return undefined;
};

/** Refuses an inherited option (`inheritedOption`); `option` names it as the caller shows it. */
export function refuseInherited(options: object, known: Iterable<string>, option: (key: string) => string): void {
  const inherited = inheritedOption(options, known);
  if (inherited === undefined) return;
  throw new SluiceError('ERR_SLUICE_UNKNOWN_OPTION', `[sluice] ${inheritedMessage('Option', option(inherited))}`);
}

const inheritedMessage = (what: string, name: string): string =>
  `${what} \`${name}\` is inherited, not the options object's own: give it as an own property.`;

/** For a nested object's names, where the peers' top-level names would mislead: the closest known name is the hint. */
export const NO_PEER_NAMES: Readonly<Record<string, string>> = {};

/**
 * A misspelt option (`windowMs`, `max`) would otherwise be ignored and the limiter would
 * silently run on defaults, so unknown names fail at start-up, all of them in one error, each
 * with a suggestion: sluice's name for a peer library's option (`hints`, for a limiter's
 * options), or the closest known name.
 */
export function checkKnownOptions(
  options: object,
  known: readonly string[] = LIMITER_OPTION_NAMES,
  hints: Readonly<Record<string, string>> = PEER_OPTION_NAMES,
  /** Where `options` sit (`policies[0]`), for a nested object's names. */
  path?: string,
): void {
  const named = (key: string) => (path === undefined ? key : `${path}.${key}`);
  refuseInherited(options, known, named);
  const unknown = Object.keys(options).filter((name) => !known.includes(name));
  if (unknown.length === 0) return;
  const described = unknown.map((name) => {
    // Own names only: `__proto__` or `constructor`, as a JSON config may hold them, would
    // otherwise read the object's prototype as a peer's option.
    const hint = Object.hasOwn(hints, name) ? hints[name] : quoted(closestName(name, known));
    return { name: named(name), hint };
  });
  if (described.length === 1) {
    const { name, hint } = described[0] as { name: string; hint: string | undefined };
    throw new SluiceError(
      'ERR_SLUICE_UNKNOWN_OPTION',
      `[sluice] Unknown option \`${name}\`${hint ? `; did you mean ${hint}?` : '.'}`,
    );
  }
  const list = described.map(({ name, hint }) => `\`${name}\`${hint ? ` (did you mean ${hint}?)` : ''}`);
  throw new SluiceError('ERR_SLUICE_UNKNOWN_OPTION', `[sluice] Unknown options: ${list.join(', ')}.`);
}

/**
 * Refuses the options a call of a package does not take (`createRedisStore`, a traffic
 * generator), naming every one, each with the closest known name as a hint, and listing every
 * option the call takes: a misspelt one would otherwise be dropped unseen and its default used,
 * and one named at a time sends its user back once per mistake. `what` names
 * the call's options in the message ("Redis store", "flashCrowd"); `error` makes the error, for
 * a package whose bad input fails with a code of its own.
 */
export function checkOptionNames(
  options: object,
  known: readonly string[],
  what: string,
  error: (message: string) => Error = (message) => new SluiceError('ERR_SLUICE_UNKNOWN_OPTION', `[sluice] ${message}`),
): void {
  const inherited = inheritedOption(options, known);
  if (inherited !== undefined) throw error(inheritedMessage(`The ${what} option`, inherited));
  const unknown = Object.keys(options).filter((key) => !known.includes(key));
  if (unknown.length === 0) return;
  const named = unknown.map((name) => {
    const hint = closestName(name, known);
    // The aliases may name an option this call does not take (`windowMs` → `window`).
    return `\`${name}\`${hint !== undefined && known.includes(hint) ? ` (did you mean \`${hint}\`?)` : ''}`;
  });
  const names = known.map((option) => `\`${option}\``);
  const list =
    names.length === 1
      ? `its only option is ${names[0]}`
      : `the options are ${names.slice(0, -1).join(', ')} and ${names.at(-1)}`;
  const which = named.length === 1 ? `option ${named[0]}` : `options ${named.join(', ')}`;
  throw error(`Unknown ${what} ${which}; ${list}.`);
}

const quoted = (name: string | undefined): string | undefined => (name === undefined ? undefined : `\`${name}\``);

/** The known name a misspelt one most likely meant (at most two edits away), for "did you mean" hints. */
export function closestName(name: string, known: readonly string[]): string | undefined {
  const aliases: Record<string, string> = { windowMs: 'window', max: 'limit', points: 'limit', duration: 'window' };
  // Only a name the call takes: a decision service's options have no `limit` to suggest.
  const alias = Object.hasOwn(aliases, name) ? (aliases[name] as string) : undefined;
  if (alias !== undefined && known.includes(alias)) return alias;
  let best: string | undefined;
  let bestDistance = 3;
  for (const candidate of known) {
    const d = distance(name.toLowerCase(), candidate.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  return best;
}

function distance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      next[j] = Math.min(
        (row[j] as number) + 1,
        (next[j - 1] as number) + 1,
        (row[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    }
    row = next;
  }
  return row[b.length] as number;
}
