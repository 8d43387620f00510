import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import { harnesses, type RunningApp } from '../harness/index.js';
import { clockAt, collectingLogger, draft11 } from '../helpers.js';

describe.each(harnesses)('$name: requests for routes that do not exist', (harness) => {
  let app: RunningApp | undefined;
  afterEach(() => app?.close());

  it('are limited by the app-wide limiter, so a scanner probing paths is refused', async () => {
    app = await harness.start({
      limits: [
        {
          name: 'site',
          algorithm: 'fixed-window',
          limit: 2,
          window: '1m',
          logger: collectingLogger(),
          clock: clockAt(0),
        },
      ],
    });
    for (const [path, remaining] of [
      ['/wp-admin', 1],
      ['/.env', 0],
    ] as const) {
      const res = await request(app.url).get(path).expect(404);
      expect(draft11(res).state).toEqual({ site: { r: remaining, t: 60 } });
    }
    await request(app.url).get('/phpmyadmin').expect(429);
    await request(app.url).get('/').expect(429);
    expect(app.hits()).toBe(0);
  });
});
