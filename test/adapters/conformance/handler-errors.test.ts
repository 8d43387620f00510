import request from 'supertest';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { harnesses, type RunningApp } from '../harness/index.js';
import { clockAt, collectingLogger } from '../helpers.js';

describe.each(harnesses)("$name: errors from the user's functions", (harness) => {
  let app: RunningApp | undefined;
  const unhandled: unknown[] = [];
  const record = (reason: unknown) => unhandled.push(reason);
  beforeEach(() => {
    unhandled.length = 0;
    process.on('unhandledRejection', record);
  });
  afterEach(async () => {
    process.off('unhandledRejection', record);
    await app?.close();
  });
  const oneEach = { algorithm: 'fixed-window', limit: 1, window: '1m', logger: collectingLogger() };

  it('an async onLimited that rejects reaches error handling: a 500, no hang, no unhandled rejection', async () => {
    const onLimited = async () => {
      throw new Error('onLimited failed');
    };
    app = await harness.start({ limits: [{ ...oneEach, onLimited, clock: clockAt(0) }] });
    await request(app.url).get('/').expect(200);
    await request(app.url).get('/').timeout(2000).expect(500);
    await new Promise((resolve) => setImmediate(resolve));
    expect(unhandled).toEqual([]);
  });
});
