import { invalid } from '../errors.js';
import { formatIpv4, formatIpv6, isIpv4Mapped, maskGroups, parseIp } from './ip-address.js';

/**
 * ISPs hand a customer a whole IPv6 prefix, commonly a /56, so keying on the full address
 * would let one client walk its prefix to dodge a per-IP limit.
 */
export const DEFAULT_IPV6_SUBNET = 56;

/**
 * The rate-limit key for a client address: IPv4 as dotted decimal; IPv4-mapped IPv6
 * (`::ffff:1.2.3.4`, also written `::ffff:102:304`) as the IPv4 address it carries; other
 * IPv6 as its network in canonical form, e.g. `2001:db8:abcd:1200::/56`. `ipv6Subnet: false`
 * keys on the whole IPv6 address, still canonical, so two spellings never make two keys.
 * Returns `undefined` when the text is not an IP address.
 *
 * @example
 * rateLimit({ limit: 100, window: '1m', key: (req) => req.user?.id ?? ipKey(req.ip) ?? 'unknown' })
 */
export function ipKey(ip: string | undefined, ipv6Subnet: number | false = DEFAULT_IPV6_SUBNET): string | undefined {
  if (ip === undefined) return undefined;
  const groups = parseIp(ip);
  if (groups === undefined) return undefined;
  if (isIpv4Mapped(groups)) return formatIpv4(groups);
  if (ipv6Subnet === false || ipv6Subnet === 128) return formatIpv6(groups);
  return `${formatIpv6(maskGroups(groups, ipv6Subnet))}/${ipv6Subnet}`;
}

/** Validates `ipv6Subnet`: a prefix length from 1 to 128, or `false` for no masking. */
export function checkIpv6Subnet(value: unknown): number | false {
  if (value === undefined) return DEFAULT_IPV6_SUBNET;
  if (value === false) return false;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 128) {
    invalid(
      'ERR_SLUICE_INVALID_IPV6_SUBNET',
      'ipv6Subnet',
      value,
      'a prefix length from 1 to 128 (ISPs commonly assign 48, 56 or 64), or false',
    );
  }
  return value;
}
