import type { IncomingMessage } from 'node:http';
import { ipKey } from './client-key.js';
import type { WarnOnce } from './warnings.js';

/**
 * How far a framework believes `X-Forwarded-For`: not at all, up to its configured proxies, or
 * always; `ignored` when the app asked it to trust a proxy in a way it does not honour (Fastify
 * 5.12 and later trust no proxy for a numeric `trustProxy`).
 */
export type ProxyTrust = 'none' | 'some' | 'all' | 'ignored';

/** What an adapter tells core about a request's client address (part of `AdapterBinding`). */
export interface ClientAddressSource<Req> {
  /** How far the framework trusts proxies for this request; asked first, once per request. */
  proxyTrust(req: Req): ProxyTrust;
  /**
   * The client address as the framework resolved it under its own trust-proxy setting, given
   * what `proxyTrust` just answered for the request, so the setting is read once.
   */
  clientIp(req: Req, trust: ProxyTrust): string | undefined;
  /** How to set proxy trust in this framework, quoted by the proxy warnings. */
  trustAdvice: string;
  /**
   * Whether the framework takes `address`, `hop` places from the app (the socket's peer is 0,
   * X-Forwarded-For's last entry 1), for a proxy and reads on past it. Asked under `'some'`
   * trust of X-Forwarded-For's first entry: one the framework reads past, a client can put
   * an address of its choosing before.
   */
  trustsAsProxy?(req: Req, address: string, hop: number): boolean;
  /**
   * The header the framework reads the proxy chain from, as the app names it (Koa's
   * `app.proxyIpHeader`); `X-Forwarded-For` when left out.
   */
  forwardingHeader?(req: Req): string;
}

/** `ClientAddressSource.trustsAsProxy` for one request. */
type TrustsAsProxy = (address: string, hop: number) => boolean;

/** Documentation addresses (RFC 5737, RFC 3849): no real proxy has one. */
const STRANGERS = ['203.0.113.9', '2001:db8::9'];
/** A hop no chain of proxies reaches: a hop count trusts fewer. */
const FAR_HOP = 1000;

/**
 * Whether a framework's compiled trust-proxy function trusts every proxy: it trusts a
 * documentation address however far along the chain it stands (`() => true`, `'0.0.0.0/0'`,
 * `'0.0.0.0/1,128.0.0.0/1'`), so any client picks its key with X-Forwarded-For. A function that
 * throws on one is judged not to: a warning never breaks a request.
 */
export function trustsStrangers(trusts: (address: string, hop: number) => unknown): boolean {
  try {
    // Read as the frameworks read it: any truthy answer trusts the hop.
    return STRANGERS.some((address) => Boolean(trusts(address, FAR_HOP)));
  } catch {
    return false;
  }
}

/** The shared key of requests whose framework reported no client address. */
export const UNKNOWN_IP_KEY = 'unknown-ip';

/** The default client key of a request: `req` the framework's, `request` Node's behind it. */
export type ClientAddressKey<Req> = (req: Req, request: IncomingMessage) => string;

/**
 * The default client key, for one middleware. The address always comes from the framework's
 * own trust-proxy result, never from a header read here, so a spoofed `X-Forwarded-For` cannot
 * choose a key. A setup that looks wrong is reported once, with a code, and never breaks the
 * request.
 */
export function createClientAddressKey<Req>(
  source: ClientAddressSource<Req>,
  ipv6Subnet: number | false,
  warn: WarnOnce,
): ClientAddressKey<Req> {
  const { trustAdvice } = source;
  // A trust function that throws on an address it never expected to see is judged not to
  // trust it: a warning never breaks a request.
  const trustsAsProxy = (req: Req, address: string, hop: number): boolean => {
    try {
      return source.trustsAsProxy?.(req, address, hop) === true;
    } catch {
      return false;
    }
  };
  const forwardingHeader = (req: Req): string => source.forwardingHeader?.(req) ?? X_FORWARDED_FOR;
  const firstOnConnection = createFirstOnConnection();
  return (req, request) => {
    const trust = source.proxyTrust(req);
    const ip = source.clientIp(req, trust);
    if (trust === 'all') {
      warn(
        'WRN_SLUICE_PERMISSIVE_TRUST_PROXY',
        `the app trusts every proxy, so any client can pick its own rate-limit key by sending ${forwardingHeader(req)}. ${trustAdvice}`,
      );
    } else if (trust === 'ignored') {
      warn(
        'WRN_SLUICE_IGNORED_TRUST_PROXY',
        `the framework ignores the app's trust-proxy setting, so the client address is the proxy's and all clients behind it share one key. ${trustAdvice}`,
      );
    } else if (firstOnConnection(request)) {
      const read = { request, header: forwardingHeader(req), trust, ip };
      warnIfProxyUnread(read, trustAdvice, warn, (address, hop) => trustsAsProxy(req, address, hop));
    }
    if (ip === undefined || ip === '') {
      warn(
        'WRN_SLUICE_UNDEFINED_IP',
        `the framework reported no client address (closed socket, Unix socket, or proxy setup); such requests share the key "${UNKNOWN_IP_KEY}". Behind a proxy: ${trustAdvice} Pass a \`key\` function if clients are identified another way.`,
      );
      return UNKNOWN_IP_KEY;
    }
    const key = ipKey(ip, ipv6Subnet);
    if (key !== undefined) return key;
    warn(
      'WRN_SLUICE_INVALID_IP',
      `the client address ${JSON.stringify(ip)} is not an IP address, so it is used as the key unchanged. Check the proxy setup or pass a \`key\` function.`,
    );
    return ip;
  };
}

/** The header Express and Fastify read the proxy chain from, and Koa by default. */
const X_FORWARDED_FOR = 'X-Forwarded-For';

/** Headers a proxy may name the client in: any of them but the one the framework reads is unread. */
const PROXY_HEADERS = ['X-Forwarded-For', 'Forwarded', 'X-Real-IP'];

/** One request's proxy setup as the framework reads it: its chain's header, its trust, its address. */
interface ProxyRead {
  request: IncomingMessage;
  header: string;
  trust: ProxyTrust;
  ip: string | undefined;
}

/**
 * Proxy setups the framework cannot see through, each of which leaves every client behind the
 * proxy on the proxy's key: a proxy chain (X-Forwarded-For, or the header the app names) while
 * no proxy is trusted; a chain from a peer the trusted-proxy list leaves out (the framework stops
 * at the socket's address, while the proxy's own entry, last in the header, is not that
 * address); or only another proxy header, which the framework does not read. And the opposite:
 * a setting that trusts more hops than an X-Forwarded-For came through (a hop count above the
 * number of proxies), which reads past every entry, so a client choosing its first entry
 * chooses its key. A chain that names no address (an empty header) counts as none.
 */
function warnIfProxyUnread(
  { request, header, trust, ip }: ProxyRead,
  trustAdvice: string,
  warn: WarnOnce,
  trustsAsProxy: TrustsAsProxy,
): void {
  const { headers } = request;
  const read = header.toLowerCase();
  const chain = headers[read];
  if (!namesAnAddress(chain)) {
    const unread = PROXY_HEADERS.find(
      (name) => name.toLowerCase() !== read && namesAnAddress(headers[name.toLowerCase()]),
    );
    if (unread === undefined) return;
    warn(
      'WRN_SLUICE_UNREAD_PROXY_HEADER',
      `a request carries ${unread} but no ${header}, the only header the framework reads the client address from, so all clients behind that proxy share its key. Make the proxy send ${header}, and ${trustAdvice}`,
    );
  } else if (trust === 'none') {
    warn(
      'WRN_SLUICE_UNEXPECTED_X_FORWARDED_FOR',
      `a request carries ${header} but the app trusts no proxy, so all clients behind a proxy share its key. If the app runs behind a proxy: ${trustAdvice}`,
    );
  } else if (
    ip !== undefined &&
    ip === (socketOf(request) as { remoteAddress?: string } | undefined)?.remoteAddress &&
    namesAnAddress(lastHop(chain)) &&
    lastHop(chain) !== ip
  ) {
    warn(
      'WRN_SLUICE_UNTRUSTED_PROXY',
      `a request from ${ip} carries ${header}, but the app's trust-proxy setting does not trust ${ip}, so its address is the key: if it is a proxy of yours, all clients behind it share that key. ${trustAdvice}`,
    );
  } else if (read === 'x-forwarded-for') {
    // Only X-Forwarded-For grows at each hop, after whatever the client sent: a proxy sets
    // another header (X-Real-IP) whole, so its entries say nothing of the hops trusted.
    // The framework reads past the first entry only where it trusts every hop from it to the
    // app: trusted by address, a nearer entry it does not trust ends the walk there. Empty
    // entries (`a,,b`, `a,`) Express and Fastify drop before numbering the hops.
    const entries = String(chain)
      .split(',')
      .map((entry) => entry.trim())
      .filter((entry) => entry !== '');
    const first = entries[0] as string;
    if (!entries.every((entry, i) => trustsAsProxy(entry, entries.length - i))) return;
    warn(
      'WRN_SLUICE_PERMISSIVE_TRUST_PROXY',
      `a request's ${header} holds ${entries.length} address(es), and the app's trust-proxy setting reads past all of them, taking the first (${first}) for a proxy too, so a client can pick its own rate-limit key by sending a ${header} of its own. Trust exactly the proxies in front of the app: ${trustAdvice}`,
    );
  }
}

/** Whether a proxy header's value holds anything but spaces and commas. */
const namesAnAddress = (value: string | string[] | undefined): value is string | string[] =>
  value !== undefined && /[^\s,]/.test(String(value));

/**
 * The right-most entry of a proxy chain: the address the nearest proxy saw. An empty one (a
 * chain ending in a comma) says nothing of the nearest proxy, and warns of none.
 */
function lastHop(value: string | string[]): string {
  const chain = String(value);
  return chain.slice(chain.lastIndexOf(',') + 1).trim();
}

/**
 * Whether a request is the first this middleware meets on its connection. A proxy puts
 * `X-Forwarded-For` on every request it forwards, so the first request of each connection
 * tells whether one sits in front; reading the header of every request cost a Fastify server
 * about 435 instructions a request, in lookups on Node's headers object. The socket is marked
 * with a symbol, as `createFirstVisit` marks requests (Node gives every socket one hidden
 * class), but by code of its own: V8 keeps what a property access has met per function, and
 * one function marking both requests and sockets met two symbols on two hidden classes, and
 * every request's two marks were then looked up the slow (megamorphic) way (90 instructions a
 * request on the pass path, 185 on the 429 path, by `http-layer-instructions.ts`).
 * A request without a readable socket (a stand-in request; an HTTP/2 stream whose session let
 * its socket go) is checked.
 */
function createFirstOnConnection(): (request: IncomingMessage) => boolean {
  const mark = Symbol('sluice.connection-seen');
  return (request) => {
    const socket = socketOf(request) as Record<symbol, true> | undefined;
    if (socket === undefined) return true;
    if (socket[mark] === true) return false;
    socket[mark] = true;
    return true;
  };
}

function socketOf(request: IncomingMessage): object | undefined {
  try {
    return request.socket ?? undefined;
  } catch {
    return undefined;
  }
}
