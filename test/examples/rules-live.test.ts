import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import request from 'supertest';
import { afterAll, describe, expect, it } from 'vitest';
import { draft11 } from '../adapters/helpers.js';
import { type ExampleProcess, freePort, printedCurl, runExample, runToEnd } from './example-process.js';

const rulesDir = fileURLToPath(new URL('../../examples/rules-live/rules', import.meta.url));

/** Counts `pattern` in `text`. */
const count = (text: string, pattern: RegExp) => text.match(new RegExp(pattern, 'g'))?.length ?? 0;

/** examples/rules-live, both commands examples/README.md gives. */
describe('example rules-live: limits from a rules file, changed while serving', () => {
  it('`demo` shows the limit raised from 5 to 8 with the counts kept, then a broken edit refused', async () => {
    const { code, output } = await runToEnd('rules-live', 'demo');
    expect(code, output).toBe(0);
    const statuses = [...output.matchAll(/statuses: \[([^\]]*)\],\s*next: (\d+)/g)].map((m) => [
      (m[1] as string).split(',').map((s) => Number(s.trim())),
      Number(m[2]),
    ]);
    expect(statuses).toEqual([
      [[200, 200, 200, 200, 200], 429],
      [[200, 200, 200], 429],
    ]);
    expect(output).toMatch(/ERR_SLUICE_RULES_UNKNOWN_KEY/);
    expect(output).toMatch(/still limit 8: .*"search";q=8;w=10/);
  });

  describe('`start`, with RULES naming a copy a test may edit', () => {
    let app: ExampleProcess | undefined;
    let dir: string | undefined;
    afterAll(async () => {
      await app?.stop();
      if (dir !== undefined) await rm(dir, { recursive: true, force: true });
    });

    it('serves the printed curl line under the file rules and applies an edit at once', async () => {
      dir = await mkdtemp(join(tmpdir(), 'sluice-example-rules-'));
      await cp(rulesDir, dir, { recursive: true });
      const file = join(dir, 'api.yaml');
      const edit = async (from: string, to: string) => {
        const text = await readFile(file, 'utf8');
        expect(text).toContain(from);
        await writeFile(file, text.replace(from, to));
      };
      const port = await freePort();
      const started = runExample('rules-live', 'start', { env: { PORT: String(port), RULES: dir } });
      app = started;
      await started.waitFor(/try: curl .*\n/);
      const url = `http://127.0.0.1:${port}`;
      expect(printedCurl(started.output())).toEqual({ method: 'GET', url: `${url}/search`, headers: {} });

      const first = await request(url).get('/search').expect(200);
      expect(draft11(first).policy).toEqual({ 'per-minute': { q: 60, w: 60 }, search: { q: 5, w: 10 } });
      for (let i = 0; i < 4; i++) await request(url).get('/search').expect(200);
      await request(url).get('/search').expect(429);

      await edit('limit: 5, window: 10s', 'limit: 8, window: 10s');
      await started.waitFor(/rules reloaded: 3 rules/);
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) statuses.push((await request(url).get('/search')).status);
      // The 5 made still count; a 10 s window that turned meanwhile weighs them a little less.
      const passed = statuses.indexOf(429);
      expect(passed, String(statuses)).toBeGreaterThanOrEqual(2);
      expect(passed, String(statuses)).toBeLessThanOrEqual(3);
      const after = await request(url).get('/').expect(200);
      expect(draft11(after).policy).toEqual({ 'per-minute': { q: 60, w: 60 } });

      const reports = count(started.output(), /The rules in force stay as they were/);
      await edit('requests_per_unit: 60', 'request_per_unit: 60');
      await started.waitFor(new RegExp(`(The rules in force stay as they were[^]*){${reports + 1}}`));
      expect(started.output()).toMatch(/ERR_SLUICE_RULES_UNKNOWN_KEY/);
      const still = await request(url).get('/search').expect(429);
      expect(draft11(still).policy.search).toEqual({ q: 8, w: 10 });
    });
  });
});
