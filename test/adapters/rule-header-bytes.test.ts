import { Buffer } from 'node:buffer';
import { parseRules } from '@sluice/rules';
import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import { harnesses, type RunningApp } from './harness/index.js';
import { clockAt, collectingLogger } from './helpers.js';

const perUser = parseRules(`
domain: api
descriptors:
  - key: header.x-user
    value: "josé"
    rate_limit: { unit: minute, requests_per_unit: 1 }
  - key: header.x-user
    rate_limit: { unit: minute, requests_per_unit: 100 }
`);

/** What an HTTP client puts on the wire for `text` in UTF-8, as the string Node's client writes byte for byte. */
const utf8OnTheWire = (text: string) => Buffer.from(text, 'utf8').toString('latin1');

// Regression: Node reads a header's bytes as Latin-1, while rule files are UTF-8 and Envoy
// compares bytes: `x-user: josé` sent in UTF-8 read `josÃ©`, and the rule for `josé` never
// matched, the client counted under the bare key's limit of 100.
describe.each(harnesses)('$name: header.<name> values sent in UTF-8', (harness) => {
  let app: RunningApp | undefined;
  afterEach(() => app?.close());

  it('match a rule written in UTF-8', async () => {
    const logger = collectingLogger();
    app = await harness.start({
      limits: [{ rules: perUser, descriptors: [['header.x-user']], clock: clockAt(0), logger }],
    });
    const { url } = app;
    const as = (user: string) => request(url).get('/').set('x-user', user);
    await as(utf8OnTheWire('josé')).expect(200);
    await as(utf8OnTheWire('josé')).expect(429);
    // Another user, and bytes that are no UTF-8 (read one character a byte), go on under the bare key.
    await as(utf8OnTheWire('jose')).expect(200);
    await as('\xff\xfe').expect(200);
    expect(logger.messages).toEqual([]);
  });
});
