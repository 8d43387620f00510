import type { IncomingMessage } from 'node:http';
import { parse } from 'node:url';
import { describe, invalid, SluiceError } from '../../errors.js';
import { isThenable } from '../../thenable.js';
import type { DescriptorEntryLike, PathReading, RuleMatchLike, RuleSetLike } from './rule-like.js';

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
  if (url.charCodeAt(0) === 0x2f && !PARSED.test(url)) {
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
 * (`express.static` serves `/public/../private/x` from `private/x`): a request is matched under
 * both readings, so that neither a router's nor a file server's way round a rule passes it (see
 * `matchReadings`).
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

/** The descriptors that read a path with dot segments resolved, each right after the one as sent. */
const resolvedReadings = new WeakSet<readonly DescriptorEntryLike[]>();

/**
 * The rules a request's descriptors match. Where a path reads two ways, each reading is matched
 * on its own, so that one reading's `replaces` drops nothing the other matched, and each match
 * holds the reading it belongs to (`reading`): the request passes only where each reading would
 * pass alone (`passes`). A rule both readings match on the path counts once, by its resolved
 * match (the one counter every spelling a file server reads alike shares): counted twice, it
 * charged a request twice on one counter and listed its policy twice in the fields.
 */
export function matchReadings(
  rules: RuleSetLike,
  domain: string,
  descriptors: readonly (readonly DescriptorEntryLike[])[],
): readonly (RuleMatchLike | undefined)[] {
  if (!descriptors.some((d) => resolvedReadings.has(d))) return rules.match(domain, descriptors);
  const resolvedAt = descriptors.flatMap((d, i) => (resolvedReadings.has(d) ? [i] : []));
  const isResolved = new Set(resolvedAt);
  const isAsSent = new Set(resolvedAt.map((i) => i - 1));
  const readingOf = (leftOut: ReadonlySet<number>): (RuleMatchLike | undefined)[] => {
    const positions = descriptors.flatMap((_, i) => (leftOut.has(i) ? [] : [i]));
    const found = rules.match(
      domain,
      positions.map((i) => descriptors[i] as readonly DescriptorEntryLike[]),
    );
    const byPosition: (RuleMatchLike | undefined)[] = new Array(descriptors.length);
    positions.forEach((at, i) => {
      byPosition[at] = found[i];
    });
    return byPosition;
  };
  const asSent = readingOf(isResolved);
  const resolved = readingOf(isAsSent);
  return descriptors.map((_, i) => {
    const sent = asSent[i];
    const read = resolved[i];
    if (isAsSent.has(i)) return sent?.rule === resolved[i + 1]?.rule ? undefined : inReading(sent, 'as-sent');
    if (isResolved.has(i)) return read?.rule === asSent[i - 1]?.rule ? read : inReading(read, 'resolved');
    // A descriptor both readings send: matched by one alone when the other's `replaces` dropped it.
    return sent === undefined ? inReading(read, 'resolved') : read === undefined ? inReading(sent, 'as-sent') : sent;
  });
}

const inReading = (match: RuleMatchLike | undefined, reading: PathReading): RuleMatchLike | undefined =>
  match === undefined ? undefined : { ...match, reading };

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
    if (typeof value !== 'string' || name === 'cookie') return Array.isArray(value) ? value[0] : value;
    // Only a value with Node's separator can be one it joined: most requests look no further.
    if (!value.includes(', ')) return value;
    const sent: string[] = [];
    const raw = request.rawHeaders;
    for (let i = 0; i < raw.length; i += 2)
      if ((raw[i] as string).toLowerCase() === name) sent.push(raw[i + 1] as string);
    return sent.length > 1 && value === sent.join(', ') ? sent[0] : value;
  };

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
  // The built-in `path`, whose lists are sent again with dot segments resolved when that reads otherwise.
  const pathAt = Object.hasOwn(own, 'path') ? -1 : keys.indexOf('path');
  const assemble = (values: readonly (string | undefined)[], resolvedPath?: string): DescriptorEntryLike[][] => {
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
      out.push(list.map((at) => ({ key: keys[at] as string, value: values[at] as string })));
      if (resolvedPath !== undefined && list.includes(pathAt)) {
        const resolved = list.map((at) => ({
          key: keys[at] as string,
          value: at === pathAt ? resolvedPath : (values[at] as string),
        }));
        resolvedReadings.add(resolved);
        out.push(resolved);
      }
    }
    return out;
  };
  /** The path resolved, when it holds dot segments: `rulePath` has decoded and split it already. */
  const resolvedOf = (path: string | undefined): string | undefined =>
    path !== undefined && DOT_SEGMENT.test(path) ? resolvedRulePath(path) : undefined;
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
    const resolved = pathAt < 0 ? undefined : resolvedOf(values[pathAt] as string | undefined);
    return values.some(isThenable)
      ? Promise.all(values).then((settled) => assemble(settled, resolved))
      : assemble(values as (string | undefined)[], resolved);
  };
}
