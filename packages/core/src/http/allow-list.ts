import { SluiceError } from '../errors.js';
import { UNKNOWN_IP_KEY } from './client-address.js';
import { ipKey } from './client-key.js';

type Awaitable<T> = T | Promise<T>;

/** Clients never limited nor counted: their keys, or a function of the request and key. */
export type AllowList<Req> = readonly string[] | ((req: Req, key: string) => Awaitable<boolean>);

export type IsAllowed<Req> = (req: Req, key: string) => Awaitable<boolean>;

/**
 * An array is matched against the client key exactly as sluice derives it (an IPv6 client's
 * key is its masked subnet, see `ipKey`); a function decides for itself. `ipv6Subnet` is given
 * when sluice derives the keys (no `key` function): an entry that is an address in another
 * spelling (`::ffff:10.0.0.5`, `::1`) could never equal a key, and is refused.
 */
export function checkAllowList<Req>(value: unknown, ipv6Subnet?: number | false): IsAllowed<Req> | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'function') return value as IsAllowed<Req>;
  // No client key is empty: sluice refuses one from a `key` function, and an address it cannot
  // read is keyed `unknown-ip`.
  if (!Array.isArray(value) || value.some((entry) => typeof entry !== 'string' || entry === '')) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      '[sluice] Option `allowList` must be an array of client keys (non-empty strings) or a function of the request and key.',
    );
  }
  if (ipv6Subnet !== undefined) {
    for (const entry of value as string[]) {
      if (entry === UNKNOWN_IP_KEY) {
        throw new SluiceError(
          'ERR_SLUICE_INVALID_OPTION',
          `[sluice] Option \`allowList\` entry ${JSON.stringify(UNKNOWN_IP_KEY)} would let any client past its limit: a request whose client closed the connection before the limit ran has no address either, and is keyed so. To exempt a caller without an address (a health check over a Unix socket), use \`skip\` with a test of the request itself.`,
        );
      }
      checkRange(entry, ipv6Subnet);
      const key = ipKey(entry, ipv6Subnet);
      if (key !== undefined && key !== entry) {
        throw new SluiceError(
          'ERR_SLUICE_INVALID_OPTION',
          `[sluice] Option \`allowList\` entry ${JSON.stringify(entry)} is keyed as ${JSON.stringify(key)}, so no client key equals it: list ${JSON.stringify(key)} (an IPv6 client is keyed by its subnet, see \`ipv6Subnet\`), or pass a \`key\` function.`,
        );
      }
    }
  }
  const keys = new Set<string>(value);
  return (_req, key) => keys.has(key);
}

/**
 * Refuses an entry written as a range (`127.0.0.0/8`, `2001:DB8::/56`, `::1/128`): entries are
 * matched as whole keys, so a range is never a client's key unless it is exactly the subnet
 * key sluice gives an IPv6 client (`2001:db8::/56` under the default `ipv6Subnet`).
 */
function checkRange(entry: string, ipv6Subnet: number | false): void {
  const slash = entry.indexOf('/');
  if (slash < 0) return;
  const key = ipKey(entry.slice(0, slash), ipv6Subnet);
  if (key === undefined || key === entry) return;
  const subnetKey = key.includes('/') ? `; an IPv6 client of that network is keyed as ${JSON.stringify(key)}` : '';
  throw new SluiceError(
    'ERR_SLUICE_INVALID_OPTION',
    `[sluice] Option \`allowList\` entry ${JSON.stringify(entry)} is a range, and entries are matched as whole client keys, so no client key equals it${subnetKey}. To allow a range, pass a function: \`allowList: (req, key) => …\`.`,
  );
}
