import { compile } from '@fastify/proxy-addr';
import { type AdapterBinding, lookupName as lookupNameImport, trustsStrangers } from '@sluice/core';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/** Fastify keeps `trustProxy` private; its options symbol is the only place it can be read. */
export function trustProxyOf(app: FastifyInstance): unknown {
  for (let o: object | null = app; o !== null; o = Object.getPrototypeOf(o)) {
    const symbol = Object.getOwnPropertySymbols(o).find((s) => s.description === 'fastify.options');
    if (symbol !== undefined) return (o as Record<symbol, { trustProxy?: unknown }>)[symbol]?.trustProxy;
  }
  return undefined;
}

type TrustFunction = (address: string, hop: number) => unknown;

/**
 * `trustProxy` in the form Fastify compiles it to (with its own `@fastify/proxy-addr`): a
 * function, addresses and subnets, or a hop count; `undefined` for `true`, for none, and for
 * a setting it cannot compile, which is Fastify's to refuse.
 */
function trustFunctionOf(trustProxy: unknown): TrustFunction | undefined {
  if (typeof trustProxy === 'function') return trustProxy as TrustFunction;
  if (typeof trustProxy === 'number') return (_, hop) => hop < trustProxy;
  const addresses =
    typeof trustProxy === 'string' ? trustProxy.split(',').map((address) => address.trim()) : trustProxy;
  if (!Array.isArray(addresses)) return undefined;
  try {
    return compile(addresses);
  } catch {
    return undefined;
  }
}

/**
 * Whether `trustProxy` trusts every proxy: `true`, or addresses, subnets or a function that
 * trust a documentation address far along the chain.
 */
function trustsEveryProxy(trustProxy: unknown): boolean {
  if (trustProxy === true) return true;
  const trusts = typeof trustProxy === 'number' ? undefined : trustFunctionOf(trustProxy);
  return trusts !== undefined && trustsStrangers(trusts);
}

/** `trustsAsProxy`: the compiled `trustProxy` asked of one hop; nothing is a proxy without one. */
function trustsAsProxyFor(
  trustProxy: unknown,
): NonNullable<AdapterBinding<FastifyRequest, FastifyReply>['trustsAsProxy']> {
  const trusts = trustFunctionOf(trustProxy);
  return (_, address, hop) => trusts !== undefined && Boolean(trusts(address, hop));
}

/**
 * A hop count is trusted by older Fastify and refused by 5.12 and later, which then take every
 * request's address from the socket. The request tells which: a request that came through a
 * proxy (`X-Forwarded-For`) keeps only the socket's address when the count was ignored.
 */
function proxyTrustFor(trustProxy: unknown): AdapterBinding<FastifyRequest, FastifyReply>['proxyTrust'] {
  if (trustsEveryProxy(trustProxy)) return (request) => (request.ips === undefined ? 'none' : 'all');
  if (typeof trustProxy === 'number' && trustProxy > 0) {
    return (request) => {
      const { ips } = request;
      if (ips === undefined) return 'none';
      return ips.length === 1 && request.headers['x-forwarded-for'] !== undefined ? 'ignored' : 'some';
    };
  }
  // `request.ips` exists only when Fastify trusts some proxy.
  return (request) => (request.ips === undefined ? 'none' : 'some');
}

/**
 * Fastify lowercases every header name it is given (and sends them so): a mixed-case name costs
 * a new string per call, then a string-table lookup at each use as a property key. sluice's
 * names are a few constants, lowercased once here; the two fields every response carries are
 * compared first (`lookupName`), where a look-up in the map cost some 70 instructions each.
 */
const lowerNames = new Map<string, string>();
// A module's own constant: optimised code calls it as it is, where it checks an imported binding's temporal dead zone on every use.
const lookupName = lookupNameImport;
const lowered = (name: string): string => {
  const known = lookupName(name);
  if (known !== name) return known;
  let lower = lowerNames.get(name);
  if (lower === undefined) {
    lower = name.toLowerCase();
    lowerNames.set(name, lower);
  }
  return lower;
};

/**
 * Whether the app's router ends a path at a `;` (`useSemicolonDelimiter`, at the top level or
 * in `routerOptions`): `/api/login;x` is then routed to `/api/login`, and a rule on it must
 * count it.
 */
export function semicolonEndsPath(app: FastifyInstance): boolean {
  const config = app.initialConfig as {
    useSemicolonDelimiter?: boolean;
    routerOptions?: { useSemicolonDelimiter?: boolean };
  };
  return config.useSemicolonDelimiter === true || config.routerOptions?.useSemicolonDelimiter === true;
}

/**
 * An absolute-form target (`GET http://host/login`, as sent to a proxy) as find-my-way routes
 * it: by what follows the host. Read by `url.parse`, as Express and Koa read such a target,
 * `http://h;x/api/login` was the path `;x/api/login`, which Fastify routes to `/api/login`.
 */
function pathOfAbsoluteForm(url: string): string {
  const scheme = url.indexOf('://');
  if (scheme < 0) return url;
  const path = url.indexOf('/', scheme + 3);
  const query = url.indexOf('?', scheme + 3);
  if (query >= 0 && (path < 0 || query < path)) return `/${url.slice(query)}`;
  return path < 0 ? '/' : url.slice(path);
}

/** The URL as find-my-way reads it; up to a `;` too where `semicolonEnds`. */
const routedUrl =
  (semicolonEnds: boolean) =>
  (request: FastifyRequest): string => {
    const given = request.originalUrl;
    const url = given.charCodeAt(0) === 0x2f ? given : pathOfAbsoluteForm(given);
    const end = semicolonEnds ? url.indexOf(';') : -1;
    return end < 0 ? url : url.slice(0, end);
  };

export const bindingFor = (
  trustProxy: unknown,
  semicolonEnds: boolean,
): AdapterBinding<FastifyRequest, FastifyReply> => ({
  trustsAsProxy: trustsAsProxyFor(trustProxy),
  rawRequest: (request) => request.raw,
  requestUrl: routedUrl(semicolonEnds),
  rawResponse: (reply) => reply.raw,
  clientIp: (request) => request.ip,
  proxyTrust: proxyTrustFor(trustProxy),
  trustAdvice:
    "set Fastify's `trustProxy` to your proxies' addresses or CIDRs (a hop count is ignored by Fastify 5.12 and later), never to `true`; behind one proxy on a Unix socket, which has no address, to `(address, hop) => hop === 0`.",
  routePattern: (request) => request.routeOptions.url,
  // Fastify adds a HEAD route to each GET route, which its handler answers, and does not tell
  // it from a HEAD route of the app's own: every HEAD route counts as its GET route.
  headRunsGet: () => true,
  setHeader: (reply, name, value) => reply.header(lowered(name), value),
  appendHeader(reply, name, value) {
    const lower = lowered(name);
    // Fastify has no append; the field may hold items of an earlier limiter, sluice's or not (SPEC §5).
    const sent = reply.getHeader(lower);
    reply.header(lower, sent === undefined ? value : `${String(sent)}, ${value}`);
  },
});
