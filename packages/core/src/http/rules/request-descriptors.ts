import { Buffer, isUtf8 } from 'node:buffer';
import type { IncomingMessage } from 'node:http';
import { parse } from 'node:url';
import { describe, invalid, SluiceError } from '../../errors.js';
import { isThenable } from '../../thenable.js';
import type { DescriptorEntryLike, RuleMatchLike, RuleSetLike } from './rule-like.js';

type Awaitable<T> = T | Promise<T>;

/** A descriptor value from the request; `undefined` leaves out every descriptor that needs it. */
export type DescriptorField<Req> = (req: Req) => Awaitable<string | undefined>;

/**
 * The descriptors a request sends when none are configured: one list of keys per descriptor,
 * as Envoy's rate-limit actions make them. Lists naming a key no field gives (`user`, `tier`
 * until `fields` has them) are left out.
 */
export const DEFAULT_DESCRIPTORS: readonly (readonly string[])[] = [
  ['remote_address'],
  ['route', 'remote_address'],
  ['user'],
  ['tier', 'user'],
];

/** What the HTTP layer knows of every request, whatever the framework. */
export interface RequestFacts {
  readonly request: IncomingMessage;
  /** The URL as the client sent it, which a framework may have rewritten on `request` (a mount). */
  readonly url: string | undefined;
  /** The client key: IPv4, or the IPv6 /56 (`ipv6Subnet`), after the framework's proxy trust. */
  remoteAddress(): string;
  /** The framework's route pattern (`/users/:id`), when it has matched one. */
  readonly route: string | undefined;
  /** The method its route answers: GET for a HEAD request a GET route's handler answers. */
  readonly routeMethod: string | undefined;
}

type Builtin = (facts: RequestFacts) => string | undefined;

/**
 * The path as a rule names it: routers reach one handler by many spellings (Express and
 * `@koa/router` ignore case and a trailing slash, Fastify decodes `%6c` to `l`), and a limit on
 * `/login` must hold for every one of them. Decoded, lower case, without repeated slashes or a
 * trailing slash. Spellings a router tells apart may share a count: stricter, never looser. A
 * segment whose escapes are malformed stays as sent. Dot segments stay, as routers read them
 * (`/api/..` is `/api/:id` with the id `..`); `resolvedRulePath` reads them as a static file
 * server does.
 */
export const rulePath = (url: string): string => spelledPath(routedPath(url));

/** A path (no query) in `rulePath`'s one spelling. */
export function spelledPath(path: string): string {
  const segments: string[] = [];
  for (const raw of path.split('/')) {
    let segment = raw;
    try {
      segment = decodeURIComponent(raw);
    } catch {
      // Kept as sent: no router decodes it either.
    }
    for (const part of segment.toLowerCase().split('/')) if (part !== '') segments.push(part);
  }
  return `/${segments.join('/')}`;
}

/** The characters that send a target through `url.parse` in `parseurl`. */
const PARSED = /[\t\n\f\r #\u00a0\ufeff]/;

/** Whether `parseurl` reads `url` through `url.parse`: it does not start with `/`, or holds one of `PARSED`. */
const readByUrlParse = (url: string): boolean => url.charCodeAt(0) !== 0x2f || PARSED.test(url);

/**
 * The path a router routes, as Express and Koa read it (`parseurl`): a target starting with `/`
 * and holding none of `PARSED` is cut at its `?`; any other goes through `url.parse`, which
 * takes an absolute-form target's path (`GET http://host/login`, as sent to a proxy), cuts at a
 * `#`, reads each `\` as `/` and `//user@host` as an authority. Each of these once read as
 * another path than the one routed: `/api\login#x`, `http://h/api\login` and `//u@h/api/login#`
 * reached `/api/login` counted by no rule on it. Fastify's find-my-way cuts at a `?` or a `#`
 * alike, and reads `\` as itself: a rule counting it as `/` is only stricter there.
 */
function routedPath(url: string): string {
  if (!readByUrlParse(url)) {
    const query = url.indexOf('?');
    return query < 0 ? url : url.slice(0, query);
  }
  try {
    return parse(url).pathname ?? '';
  } catch {
    // No router reads a target `url.parse` refuses: the path as sent, up to its query or fragment.
    return url.split(/[?#]/, 1)[0] as string;
  }
}

/**
 * A `rulePath` with its dot segments resolved, as static file servers read a path
 * (`express.static` serves `/public/../private/x` from `private/x`).
 */
function resolvedRulePath(path: string): string {
  const resolved: string[] = [];
  for (const segment of path.split('/')) {
    if (segment === '..') resolved.pop();
    else if (segment !== '.' && segment !== '') resolved.push(segment);
  }
  return `/${resolved.join('/')}`;
}

/** A `.` or `..` segment of a `rulePath`: a path with none (`/app.js`) reads one way only. */
const DOT_SEGMENT = /\/\.\.?(?:\/|$)/;

/** `//user@host` runs of a path `url.parse` read. */
const AUTHORITIES = /\/\/[^/]*@[^/]*/g;

/**
 * What `url.parse` leaves of a `//user@host` run as the path: it ends the host at the first
 * character a host may not hold (`%`, `;`, `'`, …), so `//u@h%70rivate` is the path `/%70rivate`,
 * which a static server reads as `/private`.
 */
function leftOfAuthority(run: string): string {
  try {
    const rest = parse(run).pathname ?? '';
    return rest === '' || rest.startsWith('/') ? rest : `/${rest}`;
  } catch {
    return '';
  }
}

/**
 * The other ways a path `rulePath` reads as `path` may be read, each once and none as `path`:
 * with dot segments resolved, as a static file server resolves them; and where `url.parse` read
 * the target, with each `//user@host` run read away, as a router or static server mounted at a
 * path reads the rest of the URL through `parseurl` again, to which such a run is an authority
 * (`/api//u@h/login#` reaches the `/login` of a router mounted at `/api`), dot segments kept or
 * resolved. No one reading serves every router: one mounted before the run reads it away, a
 * wildcard route (`/files/*splat`) keeps it, and a file server resolves the dot segments around
 * it. A request is matched under each (see `matchReadings`).
 */
function otherReadings(path: string, url: string | undefined): readonly string[] {
  const parsed = url !== undefined && readByUrlParse(url);
  const dotted = DOT_SEGMENT.test(path);
  // Nearly every request: a path read one way only, with nothing made for it.
  if (!parsed && !dotted) return NO_OTHER_READINGS;
  const others: string[] = [];
  const add = (reading: string) => {
    if (reading !== path && !others.includes(reading)) others.push(reading);
  };
  if (dotted) add(resolvedRulePath(path));
  if (parsed && url !== undefined) {
    const routed = routedPath(url);
    const unmounted = routed.replace(AUTHORITIES, leftOfAuthority);
    if (unmounted !== routed) {
      const spelled = spelledPath(unmounted);
      add(spelled);
      if (DOT_SEGMENT.test(spelled)) add(resolvedRulePath(spelled));
    }
  }
  return others;
}

const NO_OTHER_READINGS: readonly string[] = [];

/**
 * The readings of a path: for each descriptor that sends the built-in `path`, 0 for the one as
 * sent and 1 to 3 for the others (`otherReadings`), each right after it.
 */
const pathReadings = new WeakMap<readonly DescriptorEntryLike[], number>();

/**
 * The rules a request's descriptors match. Where a path reads more than one way, each reading is
 * matched on its own, so that one reading's `replaces` drops nothing another matched, and each
 * match holds the readings it belongs to (`readings`): the request passes only where each
 * reading would pass alone (`passes`). A rule several readings match on the path counts once,
 * by the last reading's match (the one counter every spelling a file server reads alike
 * shares): counted again, it charged a request twice on one counter and listed its policy
 * twice in the fields.
 */
export function matchReadings(
  rules: RuleSetLike,
  domain: string,
  descriptors: readonly (readonly DescriptorEntryLike[])[],
): readonly (RuleMatchLike | undefined)[] {
  if (!descriptors.some((d) => (pathReadings.get(d) ?? 0) > 0)) return rules.match(domain, descriptors);
  const readingAt = descriptors.map((d) => pathReadings.get(d));
  const count = Math.max(...readingAt.map((r) => r ?? 0)) + 1;
  // Each reading's matches, by position: the descriptors every reading sends, and its own.
  const matched = Array.from({ length: count }, (_, reading) => {
    const positions = readingAt.flatMap((r, i) => (r === undefined || r === reading ? [i] : []));
    const found = rules.match(
      domain,
      positions.map((i) => descriptors[i] as readonly DescriptorEntryLike[]),
    );
    const byPosition: (RuleMatchLike | undefined)[] = new Array(descriptors.length);
    positions.forEach((at, i) => {
      byPosition[at] = found[i];
    });
    return byPosition;
  });
  const all = (1 << count) - 1;
  const out: (RuleMatchLike | undefined)[] = new Array(descriptors.length);
  readingAt.forEach((reading, i) => {
    if (reading === undefined) {
      // Sent in every reading: matched by fewer where another reading's `replaces` dropped it.
      let readings = 0;
      let match: RuleMatchLike | undefined;
      matched.forEach((byPosition, r) => {
        const found = byPosition[i];
        if (found === undefined) return;
        match = found;
        readings |= 1 << r;
      });
      out[i] = inReadings(match, readings, all);
      return;
    }
    if (reading !== 0) return;
    // A path's readings, at i to i + count - 1: each rule once, by the last reading matching it.
    const group = Array.from({ length: count }, (_, r) => matched[r]?.[i + r]);
    group.forEach((match, r) => {
      if (match === undefined || group.slice(r + 1).some((later) => later?.rule === match.rule)) return;
      const readings = group.reduce((bits, other, o) => (other?.rule === match.rule ? bits | (1 << o) : bits), 0);
      out[i + r] = inReadings(match, readings, all);
    });
  });
  return out;
}

const inReadings = (match: RuleMatchLike | undefined, readings: number, all: number): RuleMatchLike | undefined =>
  match === undefined || readings === all ? match : { ...match, readings };

/** Built-in keys, in a Map: a key such as `constructor` names no built-in. */
const builtins = new Map<string, Builtin>([
  ['remote_address', (facts) => facts.remoteAddress()],
  ['method', (facts) => facts.request.method],
  // The pattern, never the raw URL: one counter per route, not per id in the path.
  ['route', (facts) => (facts.route === undefined ? undefined : `${facts.routeMethod} ${facts.route}`)],
  ['path', (facts) => (facts.url === undefined ? undefined : rulePath(facts.url))],
]);

/**
 * A header's first value. Node joins a header sent more than once into one value (`K, junk`),
 * which as a descriptor gave the client a counter of its choosing on each request: such a value
 * reads as the first one sent. A value the app's own middleware set on `req.headers` is read as
 * it is.
 */
const headerField =
  (name: string): Builtin =>
  ({ request }) => {
    const value = request.headers[name];
    // Cookie is one header however many lines carry it (HTTP/2 sends each crumb on its own).
    if (typeof value !== 'string' || name === 'cookie') return asUtf8(Array.isArray(value) ? value[0] : value);
    // Only a value with Node's separator can be one it joined: most requests look no further.
    if (!value.includes(', ')) return asUtf8(value);
    const sent: string[] = [];
    const raw = request.rawHeaders;
    for (let i = 0; i < raw.length; i += 2)
      if ((raw[i] as string).toLowerCase() === name) sent.push(raw[i + 1] as string);
    return asUtf8(sent.length > 1 && value === sent.join(', ') ? sent[0] : value);
  };

/** Characters outside ASCII, and those outside the bytes Latin-1 reads. */
const NON_ASCII = /[\u0080-\uffff]/;
const BEYOND_LATIN1 = /[\u0100-\uffff]/;

/**
 * A header value as its bytes read in UTF-8, where they are UTF-8. Node reads a header's bytes
 * as Latin-1, one character a byte, while rule files are UTF-8 and Envoy compares bytes: a
 * client sending `x-user: josé` sent `josÃ©`, which no rule for `josé` matched. A value that is
 * not UTF-8, or one the app set with characters no byte reads as, is kept as it is.
 */
function asUtf8(value: string | undefined): string | undefined {
  if (value === undefined || !NON_ASCII.test(value) || BEYOND_LATIN1.test(value)) return value;
  const bytes = Buffer.from(value, 'latin1');
  return isUtf8(bytes) ? bytes.toString('utf8') : value;
}

/**
 * Compiles the `descriptors` and `fields` options into a function giving a request's
 * descriptors. Built-in keys: `remote_address`, `method`, `route` (`'GET /users/:id'`),
 * `path` (`rulePath`) and `header.<name>`; `fields` adds any other (`user`, `tier`, …)
 * and may replace a built-in.
 */
export function compileDescriptors<Req>(
  descriptors: unknown,
  fields: unknown,
): (req: Req, facts: RequestFacts) => Awaitable<DescriptorEntryLike[][]> {
  if (fields !== undefined && (typeof fields !== 'object' || fields === null || Array.isArray(fields))) {
    invalid('ERR_SLUICE_INVALID_OPTION', 'fields', fields, 'an object of functions `(req) => string | undefined`');
  }
  const own = (fields ?? {}) as Record<string, unknown>;
  for (const [key, field] of Object.entries(own)) {
    if (typeof field !== 'function')
      invalid('ERR_SLUICE_INVALID_OPTION', `fields.${key}`, field, 'a function of the request');
  }
  // Own names only: `toString` in `descriptors` would otherwise read Object's method as a field.
  const known = (key: string): boolean =>
    Object.hasOwn(own, key) || builtins.has(key) || /^header\.[!#$%&'*+.^_`|~0-9a-z-]+$/.test(key);
  const lists = descriptors === undefined ? DEFAULT_DESCRIPTORS.filter((list) => list.every(known)) : descriptors;
  if (!Array.isArray(lists) || lists.length === 0) {
    invalid(
      'ERR_SLUICE_INVALID_OPTION',
      'descriptors',
      descriptors,
      "a non-empty list of key lists such as [['remote_address']]",
    );
  }
  lists.forEach((list: unknown, i) => {
    if (!Array.isArray(list) || list.length === 0 || !list.every((key) => typeof key === 'string' && known(key))) {
      invalid(
        'ERR_SLUICE_INVALID_OPTION',
        `descriptors[${i}]`,
        list,
        'a non-empty list of keys, each built in (remote_address, method, route, path, header.<lower-case name>) or given in `fields`',
      );
    }
  });
  const keys = [...new Set((lists as string[][]).flat())];
  const readers = keys.map((key): ((req: Req, facts: RequestFacts) => Awaitable<string | undefined>) => {
    const field = Object.hasOwn(own, key) ? (own[key] as DescriptorField<Req>) : undefined;
    if (field !== undefined) return (req) => field(req);
    const builtin = builtins.get(key) ?? headerField(key.slice('header.'.length));
    return (_req, facts) => builtin(facts);
  });
  // Each list as positions in `keys`, found once here rather than looked up per request.
  const positions = (lists as string[][]).map((list) => list.map((key) => keys.indexOf(key)));
  // The built-in `path`, whose lists are sent again in each of its other readings (`otherReadings`).
  const pathAt = Object.hasOwn(own, 'path') ? -1 : keys.indexOf('path');
  const assemble = (values: readonly (string | undefined)[], others: readonly string[]): DescriptorEntryLike[][] => {
    values.forEach((value, i) => {
      // A field's bug must not turn into a silent key such as "42" or "[object Object]".
      if (value !== undefined && typeof value !== 'string') {
        throw new SluiceError(
          'ERR_SLUICE_INVALID_KEY',
          `[sluice] The descriptor field \`${keys[i]}\` must give a string or undefined; received ${describe(value)}.`,
        );
      }
    });
    const out: DescriptorEntryLike[][] = [];
    for (const list of positions) {
      if (list.some((at) => values[at] === undefined)) continue;
      const asSent = list.map((at) => ({ key: keys[at] as string, value: values[at] as string }));
      out.push(asSent);
      if (others.length === 0 || !list.includes(pathAt)) continue;
      pathReadings.set(asSent, 0);
      others.forEach((other, r) => {
        const reading = list.map((at) => ({
          key: keys[at] as string,
          value: at === pathAt ? other : (values[at] as string),
        }));
        pathReadings.set(reading, r + 1);
        out.push(reading);
      });
    }
    return out;
  };
  return (req, facts) => {
    const values: Awaitable<string | undefined>[] = [];
    for (const read of readers) {
      try {
        values.push(read(req, facts));
      } catch (error) {
        // A field that throws after one that rejected: the rejection, left unheard, ended the process.
        for (const value of values) if (isThenable(value)) Promise.resolve(value).catch(() => {});
        throw error;
      }
    }
    const path = pathAt < 0 ? undefined : (values[pathAt] as string | undefined);
    const others = path === undefined ? NO_OTHER_READINGS : otherReadings(path, facts.url);
    return values.some(isThenable)
      ? Promise.all(values).then((settled) => assemble(settled, others))
      : assemble(values as (string | undefined)[], others);
  };
}
