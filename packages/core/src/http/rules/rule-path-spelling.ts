import type { WarnOnce } from '../warnings.js';
import { spelledPath } from './request-descriptors.js';
import type { RuleSetLike } from './rule-like.js';

/**
 * How a rule's `path` value must be written to match: `rulePath`'s spelling of a request's
 * path, a trailing `*` wildcard kept. `*` alone matches every path.
 */
export function rulePathValue(value: string): string {
  // A placeholder no path spelling changes stands for each `*` while the rest is respelt. Spelt
  // whole: a request's path decodes `%3F` and `%23` to the `?` or `#` such a value holds.
  return value === '*' ? value : spelledPath(value.replaceAll('*', '\0')).replaceAll('\0', '*');
}

/**
 * Warns, once per value, of `path` values in the domain's rules that no request's `path` can
 * equal (`/Login`, `/login/`): such a rule never matches and leaves that path unlimited. The
 * rules HTTP limiter asks it of each rule set once, when the set comes into force: at start-up
 * and after each reload.
 */
export function checkRulePaths(rules: RuleSetLike, domain: string, warn: WarnOnce): void {
  for (const rule of rules.rules ?? []) {
    if (rule.domain !== domain) continue;
    for (const { key, value } of rule.path) {
      if (key !== 'path' || value === undefined) continue;
      // A `*` is a wildcard only at the end of a value: one that starts a value is the
      // character, which no path starts with.
      if (value.startsWith('*') && value !== '*') {
        warn(
          'WRN_SLUICE_RULE_PATH_SPELLING',
          `a rule's \`path\` value ${JSON.stringify(value)} can never match: a \`*\` stands for any text only at the end of a value, and every request path starts with "/".`,
          value,
        );
        continue;
      }
      const written = rulePathValue(value);
      if (written === value) continue;
      warn(
        'WRN_SLUICE_RULE_PATH_SPELLING',
        `a rule's \`path\` value ${JSON.stringify(value)} can never match: request paths are compared decoded, in lower case, without repeated slashes or a trailing slash. Write ${JSON.stringify(written)}.`,
        value,
      );
    }
  }
}
