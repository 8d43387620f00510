import type { WarnOnce } from '../warnings.js';
import { spelledPath } from './request-descriptors.js';
import type { RuleSetLike } from './rule-like.js';

/**
 * How a rule's `path` value must be written to match: `rulePath`'s spelling of a request's
 * path, each `*` wildcard kept where it stands. A value that starts with a wildcard may leave
 * the leading slash to it.
 */
export function rulePathValue(value: string): string {
  // A placeholder no path spelling changes stands for each wildcard while the rest is respelt;
  // a request's path never holds a `?` or a `#`.
  const path = value.replaceAll('*', '\0').split(/[?#]/, 1)[0] as string;
  const form = spelledPath(path).replaceAll('\0', '*');
  return value.startsWith('*') && form.startsWith('/*') ? form.slice(1) : form;
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
