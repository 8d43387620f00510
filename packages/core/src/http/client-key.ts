import { describe, invalid, SluiceError } from '../errors.js';
import { carriesIpv4, formatIpv4, formatIpv6, maskGroups, parseIp } from './ip-address.js';

/** Called through this module's own constant: see `charCodeAt` in `store-key.ts`. */
const charCodeAt = String.prototype.charCodeAt;

/**
 * ISPs hand a customer a whole IPv6 prefix, commonly a /56, so keying on the full address
 * would let one client walk its prefix to dodge a per-IP limit.
 */
export const DEFAULT_IPV6_SUBNET = 56;

const PREFIX_LENGTH = 'a prefix length from 1 to 128 (ISPs commonly assign 48, 56 or 64), or false';

const isPrefixLength = (value: unknown): value is number | false =>
  value === false || (typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= 128);

// The last address keyed, and its key: a client that sends many requests in a row (a flood
// most of all) is keyed once, not once per request. Requests on one connection bring the
// same string, which compares at once; any other compares in a few instructions.
let lastIp: string | undefined;
let lastSubnet: number | false = DEFAULT_IPV6_SUBNET;
let lastKey = '';

/**
 * The rate-limit key for a client address: IPv4 as dotted decimal; IPv6 that carries an IPv4
 * address (mapped `::ffff:1.2.3.4`, also written `::ffff:102:304`; translated
 * `::ffff:0:1.2.3.4`; compatible `::1.2.3.4`) as that IPv4 address, so such clients neither
 * share one /56 nor escape their IPv4 limit; other IPv6 as its network in canonical form, e.g. `2001:db8:abcd:1200::/56`. `ipv6Subnet: false`
 * keys on the whole IPv6 address, still canonical, so two spellings never make two keys.
 * Returns `undefined` when the text is not an IP address.
 *
 * @example
 * rateLimit({ limit: 100, window: '1m', key: (req) => req.user?.id ?? ipKey(req.ip) ?? 'unknown' })
 */
export function ipKey(ip: string | undefined, ipv6Subnet: number | false = DEFAULT_IPV6_SUBNET): string | undefined {
  if (ip !== undefined && ip === lastIp && ipv6Subnet === lastSubnet) return lastKey;
  // Checked past the memo, which holds only a good prefix length, and for every address: a bad
  // one (`Number()` of an unset variable, 0) would otherwise surface with the first IPv6 client.
  if (!isPrefixLength(ipv6Subnet)) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_IPV6_SUBNET',
      `[sluice] The prefix length given to \`ipKey\` must be ${PREFIX_LENGTH}; received ${describe(ipv6Subnet)}.`,
    );
  }
  if (ip === undefined) return undefined;
  const key = keyOfAddress(ip, ipv6Subnet);
  if (key !== undefined) {
    lastIp = ip;
    lastSubnet = ipv6Subnet;
    lastKey = key;
  }
  return key;
}

function keyOfAddress(ip: string, ipv6Subnet: number | false): string | undefined {
  if (isCanonicalIpv4(ip)) return ip;
  const groups = parseIp(ip);
  if (groups === undefined) return undefined;
  if (carriesIpv4(groups)) return formatIpv4(groups);
  if (ipv6Subnet === false || ipv6Subnet === 128) return formatIpv6(groups);
  return `${formatIpv6(maskGroups(groups, ipv6Subnet))}/${ipv6Subnet}`;
}

/**
 * True for dotted decimal with four parts of 0–255 and no leading zeros: such an address is
 * already its own key. Most requests take this path, so it is a character loop that
 * allocates nothing; everything else goes through the full parser.
 */
function isCanonicalIpv4(text: string): boolean {
  if (text.length < 7 || text.length > 15) return false;
  let parts = 0;
  let value = 0;
  let digits = 0;
  for (let i = 0; i <= text.length; i++) {
    const c = i < text.length ? charCodeAt.call(text, i) : 46;
    if (c === 46) {
      if (digits === 0 || value > 255) return false;
      parts++;
      value = 0;
      digits = 0;
    } else if (c >= 48 && c <= 57) {
      if (digits > 0 && value === 0) return false; // a leading zero
      value = value * 10 + (c - 48);
      digits++;
      if (digits > 3) return false;
    } else {
      return false;
    }
  }
  return parts === 4;
}

/** Validates `ipv6Subnet`: a prefix length from 1 to 128, or `false` for no masking. */
export function checkIpv6Subnet(value: unknown): number | false {
  if (value === undefined) return DEFAULT_IPV6_SUBNET;
  if (!isPrefixLength(value)) invalid('ERR_SLUICE_INVALID_IPV6_SUBNET', 'ipv6Subnet', value, PREFIX_LENGTH);
  return value;
}
