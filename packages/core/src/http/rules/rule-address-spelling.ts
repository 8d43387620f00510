import { ipKey } from '../client-key.js';
import type { WarnOnce } from '../warnings.js';
import type { RuleSetLike } from './rule-like.js';

/**
 * Warns, once per value, of `remote_address` values in the domain's rules that no request's
 * `remote_address` can equal. The middleware sends a client's address as its key: IPv6 as its
 * `ipv6Subnet` network (`2001:db8::/56`) in canonical form, an IPv4 address IPv6 carries
 * (`::ffff:192.0.2.7`) as that IPv4 address. Envoy sends the whole address as written, so a
 * rule for one IPv6 client (a ban, say) carried over from its files never matches here and
 * leaves that client unlimited. Asked of each rule set as it comes into force, as
 * `checkRulePaths` is. A wildcard value, or one that is no IP address, is left alone.
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
      if (key !== 'remote_address' || value === undefined || value.endsWith('*')) continue;
      const sent = ipKey(value, ipv6Subnet);
      if (sent === undefined || sent === value) continue;
      const whole = ipv6Subnet === false ? undefined : ipKey(value, false);
      const instead =
        whole !== undefined && whole !== sent
          ? ` Write ${JSON.stringify(sent)} to limit its /${ipv6Subnet} network, as the middleware keys IPv6 clients, or give the middleware \`ipv6Subnet: false\` to send whole addresses (written ${JSON.stringify(whole)}).`
          : ` Write ${JSON.stringify(sent)}.`;
      warn(
        'WRN_SLUICE_RULE_ADDRESS_SPELLING',
        `a rule's \`remote_address\` value ${JSON.stringify(value)} can never match: requests send the client's address as its key, ${JSON.stringify(sent)} for this one.${instead}`,
        value,
      );
    }
  }
}
