import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type RuleSet, watchRules } from '@sluice/rules';
import { createApp } from './app.js';

/**
 * Serves with a copy of rules/, then edits it while serving: the search limit goes from 5 to
 * 8 per 10 s (the requests already made still count), then a broken edit, which changes nothing.
 * The requests go through `app.inject`, from one client address.
 */
const dir = await mkdtemp(join(tmpdir(), 'sluice-rules-live-'));
await cp(fileURLToPath(new URL('../rules', import.meta.url)), dir, { recursive: true });
const file = join(dir, 'api.yaml');
let reloaded: (set: RuleSet) => void = () => {};
let failed: (message: string) => void = () => {};
const rules = watchRules(dir, {
  debounceMs: 50,
  onReload: (set) => reloaded(set),
  onError: (error) => failed(error.message),
});
const app = await createApp(rules);
// Serving, as a real app does (a watcher alone does not keep the process alive).
await app.listen({ port: 0, host: '127.0.0.1' });

/** `n` searches, then one more: their statuses, and that last one's status and RateLimit field. */
const search = async (n: number) => {
  const statuses: number[] = [];
  for (let i = 0; i < n; i++)
    statuses.push((await app.inject({ url: '/search', remoteAddress: '203.0.113.7' })).statusCode);
  const next = await app.inject({ url: '/search', remoteAddress: '203.0.113.7' });
  return { statuses, next: next.statusCode, ratelimit: next.headers.ratelimit };
};
const edit = async (from: string, to: string) => {
  const text = await readFile(file, 'utf8');
  await writeFile(file, text.replace(from, to));
};

console.log('limit 5 per 10 s: 5 searches pass, the next is refused:', await search(5));
const swapped = new Promise<RuleSet>((resolve) => {
  reloaded = resolve;
});
await edit('limit: 5, window: 10s', 'limit: 8, window: 10s');
await swapped;
console.log('after the edit, limit 8 per 10 s: the 5 made still count, so 3 more pass:', await search(3));
const reported = new Promise<string>((resolve) => {
  failed = resolve;
});
await edit('requests_per_unit: 60', 'request_per_unit: 60');
console.log('a broken edit is reported and changes nothing:\n', await reported);
console.log(
  'still limit 8:',
  (await app.inject({ url: '/search', remoteAddress: '203.0.113.7' })).headers['ratelimit-policy'],
);

await app.close();
await rules.close();
await rm(dir, { recursive: true, force: true });
