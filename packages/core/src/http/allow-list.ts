import { SluiceError } from '../errors.js';
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
  if (!Array.isArray(value) || value.some((entry) => typeof entry !== 'string')) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      '[sluice] Option `allowList` must be an array of client keys (strings) or a function of the request and key.',
    );
  }
  if (ipv6Subnet !== undefined) {
    for (const entry of value as string[]) {
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
