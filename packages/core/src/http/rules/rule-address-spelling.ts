import { ipKey } from '../client-key.js';
import type { WarnOnce } from '../warnings.js';
import type { RuleSetLike } from './rule-like.js';

/**
 * Warns, once per value, of `remote_address` values in the domain's rules that no request's
 * `remote_address` can equal. The middleware sends a client's address as its key: IPv6 as its
 * `ipv6Subnet` network (`2001:db8::/56`) in canonical form, an IPv4 address IPv6 carries
 * (`::ffff:192.0.2.7`) as that IPv4 address, IPv4 whole. Envoy sends the whole address as
 * written, so a rule for one IPv6 client (a ban, say) carried over from its files never
 * matches here and leaves that client unlimited. Asked of each rule set as it comes into force,
 * as `checkRulePaths` is. A value that is no IP address or network is left alone.
 */
export function checkRuleAddresses(
  rules: RuleSetLike,
  domain: string,
  ipv6Subnet: number | false,
  warn: WarnOnce,
): void {
  for (const rule of rules.rules ?? []) {
    if (rule.domain !== domain) continue;
    for (const { key, value } of rule.path) {
      if (key !== 'remote_address' || value === undefined) continue;
      const problem = value.endsWith('*') ? wildcardProblem(value, ipv6Subnet) : spellingProblem(value, ipv6Subnet);
      if (problem === undefined) continue;
      warn(
        'WRN_SLUICE_RULE_ADDRESS_SPELLING',
        `a rule's \`remote_address\` value ${JSON.stringify(value)} can never match: requests send the client's address as its key${problem}`,
        value,
      );
    }
  }
}

/** What is wrong with an address or network value, after "requests send … as its key"; `undefined` if nothing is. */
function spellingProblem(value: string, ipv6Subnet: number | false): string | undefined {
  const slash = value.lastIndexOf('/');
  if (slash < 0) {
    const sent = ipKey(value, ipv6Subnet);
    if (sent === undefined || sent === value) return undefined;
    const whole = ipv6Subnet === false ? undefined : ipKey(value, false);
    if (whole === undefined || whole === sent) return `, ${JSON.stringify(sent)} for this one. Write that.`;
    return `, ${JSON.stringify(sent)} for this one. Write that to limit its /${ipv6Subnet} network, as the middleware keys IPv6 clients, or give the middleware \`ipv6Subnet: false\` to send whole addresses (written ${JSON.stringify(whole)}).`;
  }
  const address = value.slice(0, slash);
  const sent = ipKey(address, ipv6Subnet);
  if (sent === undefined || sent === value) return undefined;
  if (!sent.includes(':')) return `, an IPv4 client's whole address. ${ipv4Range(sent, value.slice(slash + 1))}`;
  if (!sent.includes('/'))
    return ", an IPv6 client's whole address (`ipv6Subnet` false or 128). Write one address, or a range as a trailing `*` wildcard.";
  if (Number(value.slice(slash + 1)) < (ipv6Subnet as number))
    return `, its /${ipv6Subnet} network for an IPv6 client, and this holds many: no one value matches them all. Write each /${ipv6Subnet} (the first is ${JSON.stringify(sent)}), or a range as a trailing \`*\` wildcard.`;
  return `, its /${ipv6Subnet} network for an IPv6 client, ${JSON.stringify(sent)} for the one holding this. Write that.`;
}

/** How to write an IPv4 network: as its address, or as the wildcard its whole octets make. */
function ipv4Range(address: string, length: string): string {
  if (length === '32') return `Write ${JSON.stringify(address)}.`;
  const octets = Number(length) / 8;
  if (!Number.isInteger(octets) || octets < 0 || octets > 3)
    return 'Write one address, or a range as a trailing `*` wildcard.';
  return `Write the range as a trailing \`*\` wildcard: ${JSON.stringify([...address.split('.').slice(0, octets), '*'].join('.'))}.`;
}

/**
 * What is wrong with a wildcard value, whose text before the `*` no key can start with: keys
 * are in canonical form, hex digits in lower case and groups without leading zeros; an IPv4
 * address IPv6 carries is sent as IPv4, and at a prefix length of 64 or less nothing else
 * starts `::ffff:`; and a network's bits past its prefix length are 0, so a /56 key's fourth
 * group ends in `00` (`2001:db8:abcd:1234:*`, a /64 wildcard carried over, matches nothing).
 */
function wildcardProblem(value: string, ipv6Subnet: number | false): string | undefined {
  const prefix = value.slice(0, -1);
  if (!prefix.includes(':') || !/^[\dA-Fa-f:./]*$/.test(prefix)) return undefined;
  if (/[A-F]/.test(prefix)) return `, its IPv6 hex digits in lower case: write ${JSON.stringify(value.toLowerCase())}.`;
  const masked = ipv6Subnet !== false && ipv6Subnet <= 64;
  if (masked && prefix.startsWith('::ffff:'))
    return ', and an IPv4 address IPv6 carries as that IPv4 address: write the wildcard without `::ffff:`.';
  const groups = prefix.split('/')[0]?.split(':') ?? [];
  // Each group the prefix holds whole (one followed by `:`), before any `::`, where its place is known.
  const whole = groups.slice(0, -1);
  const compressed = whole.indexOf('');
  for (const [i, group] of (compressed < 0 ? whole : whole.slice(0, compressed)).entries()) {
    if (group.length > 1 && group.startsWith('0'))
      return `, in canonical form, its groups without leading zeros: write ${JSON.stringify(value.replace(/(^|:)0+(?=[\da-f])/g, '$1'))}.`;
    const hostBits = ipv6Subnet === false ? 0 : Math.min(16, Math.max(0, 16 * (i + 1) - ipv6Subnet));
    if (hostBits > 0 && (Number.parseInt(group, 16) & ((1 << hostBits) - 1)) !== 0)
      return `, its /${ipv6Subnet} network for an IPv6 client, whose bits past the first ${ipv6Subnet} are 0: no key starts so. Write the /${ipv6Subnet} networks, or a wildcard of what their keys share.`;
  }
  return undefined;
}
