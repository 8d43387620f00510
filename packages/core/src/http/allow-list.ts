import { SluiceError } from '../errors.js';

type Awaitable<T> = T | Promise<T>;

/** Clients never limited nor counted: their keys, or a function of the request and key. */
export type AllowList<Req> = readonly string[] | ((req: Req, key: string) => Awaitable<boolean>);

export type IsAllowed<Req> = (req: Req, key: string) => Awaitable<boolean>;

/**
 * An array is matched against the client key exactly as sluice derives it (an IPv6 client's
 * key is its masked subnet, see `ipKey`); a function decides for itself.
 */
export function checkAllowList<Req>(value: unknown): IsAllowed<Req> | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'function') return value as IsAllowed<Req>;
  if (!Array.isArray(value) || value.some((entry) => typeof entry !== 'string')) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      '[sluice] Option `allowList` must be an array of client keys (strings) or a function of the request and key.',
    );
  }
  const keys = new Set<string>(value);
  return (_req, key) => keys.has(key);
}
