import { parseRules } from '@sluice/rules';
import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import { rulePathValue } from '../../packages/core/src/http/rules/rule-path-spelling.js';
import { harnesses, type RunningApp } from './harness/index.js';
import { clockAt, collectingLogger } from './helpers.js';

const rulesOn = (...paths: string[]) =>
  parseRules(`
domain: api
descriptors:
${paths.map((path) => `  - key: path\n    value: "${path}"\n    rate_limit: { unit: minute, requests_per_unit: 1 }`).join('\n')}
`);

const descriptors = [['path']];

// Regression: the `path` descriptor is compared in one spelling (decoded, lower case, no
// repeated slashes, dot segments or trailing slash); a rule written otherwise (`/Login`,
// `/login/`) never matched, leaving that path unlimited without a word.
describe.each(harnesses)('$name: a rule whose path value no request path can equal', (harness) => {
  let app: RunningApp | undefined;
  afterEach(() => app?.close());

  it('warns once per value at start-up, naming the value and the spelling to write', async () => {
    const logger = collectingLogger();
    const rules = rulesOn('/Login', '/other/', '/api/*', '*/x', '/ok');
    app = await harness.start({ limits: [{ rules, descriptors, clock: clockAt(0), logger }] });
    expect(logger.codes()).toEqual([
      'WRN_SLUICE_RULE_PATH_SPELLING',
      'WRN_SLUICE_RULE_PATH_SPELLING',
      'WRN_SLUICE_RULE_PATH_SPELLING',
    ]);
    expect(logger.messages[0]).toContain('"/Login"');
    expect(logger.messages[0]).toContain('Write "/login"');
    expect(logger.messages[1]).toContain('Write "/other"');
    // A `*` starts no wildcard: `*/x` was read as one, and said nothing, though it matched nothing.
    expect(logger.messages[2]).toContain('"*/x" can never match: a `*` stands for any text only at the end');
    // Such rules indeed never match: `/other` and `/a/x` stay unlimited.
    for (const path of ['/other', '/other', '/a/x', '/a/x'])
      await request(app.url)
        .get(path)
        .expect(path === '/other' ? 200 : 404);
    expect(logger.messages).toHaveLength(3);
  });

  it("checks a watcher's rule set again after each reload", async () => {
    const logger = collectingLogger();
    const watcher = { current: rulesOn('/other') };
    app = await harness.start({ limits: [{ rules: watcher, descriptors, clock: clockAt(0), logger }] });
    expect(logger.messages).toEqual([]);
    watcher.current = rulesOn('/Other', '/API/*');
    await request(app.url).get('/').expect(200);
    expect(logger.messages).toHaveLength(2);
    expect(logger.messages[0]).toContain('Write "/other"');
    expect(logger.messages[1]).toContain('Write "/api/*"');
    await request(app.url).get('/').expect(200);
    expect(logger.messages).toHaveLength(2);
  });

  it('says nothing when `path` comes from a field of the app', async () => {
    const logger = collectingLogger();
    const fields = { path: () => '/Login' };
    app = await harness.start({
      limits: [{ rules: rulesOn('/Login'), descriptors, fields, clock: clockAt(0), logger }],
    });
    await request(app.url).get('/').expect(200);
    await request(app.url).get('/').expect(429);
    expect(logger.messages).toEqual([]);
  });
});

describe('rulePathValue: the spelling a rule path value needs, wildcards kept', () => {
  it.each([
    ['/login', '/login'],
    ['/Login', '/login'],
    ['/login/', '/login'],
    // Dot segments stay, as routers read them.
    ['//a/./b/../c/', '/a/./b/../c'],
    ['/a%20b', '/a b'],
    ['/api/*', '/api/*'],
    ['/API/*', '/api/*'],
    ['/api*', '/api*'],
    ['*', '*'],
    ['/a/*/b', '/a/*/b'],
    // Spelt whole: a path decodes `%3F` and `%23` to these.
    ['/a?b', '/a?b'],
    ['/A#x', '/a#x'],
    ['/a?b*', '/a?b*'],
  ])('%s → %s', (value, written) => {
    expect(rulePathValue(value)).toBe(written);
  });
});
