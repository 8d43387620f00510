import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The files under a rules directory that were not read as rules: `loadRules` reads `.yaml`,
 * `.yml` and `.json` files, where envoyproxy/ratelimit reads every file under its config
 * directory, so a rules file named otherwise (`ratelimit`, `limits.conf`) would be left out
 * without a word, and every call of its domain answered OK. Names starting with a dot are
 * skipped by both (a ConfigMap volume's `..data`), and a link to a directory is not followed.
 */
export function unreadRuleFiles(path: string, read: readonly string[]): string[] {
  if (!statSync(path).isDirectory()) return [];
  const known = new Set(read);
  const unread: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.name.startsWith('.')) continue;
      const full = join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.isSymbolicLink() && statSync(full, { throwIfNoEntry: false })?.isDirectory()) continue;
      else if (!known.has(full)) unread.push(full);
    }
  };
  walk(path);
  return unread.sort();
}
