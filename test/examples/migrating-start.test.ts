import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ExampleProcess, freePort, printedCurls, runExample } from './example-process.js';

/**
 * examples/migrating's `start`: the four apps of test/examples/migrating.test.ts served at once,
 * on PORT and the three ports after it.
 */
describe('example migrating: `start` serves each guide app on its own port', () => {
  let app: ExampleProcess;
  let port: number;

  beforeAll(async () => {
    port = await freePort(4);
    app = runExample('migrating', 'start', { env: { PORT: String(port) } });
    await app.waitFor(/koa-ratelimit .*\n/);
  });
  afterAll(() => app?.stop());

  it('each printed curl line is answered by its app, under its limit', async () => {
    const curls = printedCurls(app.output());
    expect(curls.map((c) => new URL(c.url).port)).toEqual([0, 1, 2, 3].map((i) => String(port + i)));
    const replies = await Promise.all(
      curls.map((c) => request(new URL(c.url).origin).get(new URL(c.url).pathname).set(c.headers).expect(200)),
    );
    expect(replies.map((r) => r.headers.ratelimit ?? r.body)).toEqual([
      expect.stringMatching(/^"100-per-15m";r=99;t=\d+$/),
      expect.stringMatching(/^"3-per-1m";r=2;t=\d+$/),
      { remainingPoints: 5 },
      expect.stringMatching(/^"3-per-1m";r=2;t=\d+$/),
    ]);
    expect(replies[1]?.body).toEqual({ user: 'ada', remaining: 2 });
  });
});
