import { once } from 'node:events';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { get, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rateLimit } from '@sluice/express';
import { parseRules } from '@sluice/rules';
import express from 'express';
import request from 'supertest';
import { expect, it } from 'vitest';
import { clockAt, collectingLogger } from './helpers.js';

const rules = parseRules(`
domain: api
descriptors:
  - key: path
    value: /api/login
    rate_limit: { unit: minute, requests_per_unit: 1 }
`);

// Express rewrites `req.url` while a mount handles the request: under `app.use('/api', …)` the
// path read `/login`, and a rule on `/api/login` matched nothing there, with no warning.
it.each([
  ['mounted at a path', (app: express.Express, limit: express.RequestHandler) => app.use('/api', limit)],
  [
    'in a router mounted at a path',
    (app: express.Express, limit: express.RequestHandler) => app.use('/api', express.Router().use(limit)),
  ],
])('Express, a limiter %s: a rule on the full path holds', async (_, mount) => {
  const app = express();
  mount(app, rateLimit({ rules, descriptors: [['path']], clock: clockAt(0), logger: collectingLogger() }));
  app.post('/api/login', (_req, res) => {
    res.send('ok');
  });
  await request(app).post('/api/login').expect(200);
  await request(app).post('/api/login').expect(429);
});

/** The statuses of `paths`, each sent in turn as written (a client library tidies `/x/..`) to `app`. */
async function statusesOf(app: express.Express, paths: readonly string[]) {
  const server = app.listen(0, '127.0.0.1');
  await once(server, 'listening');
  try {
    const { port } = server.address() as AddressInfo;
    const statusOf = (path: string) =>
      new Promise<number | undefined>((resolve, reject) => {
        const req = httpRequest({ host: '127.0.0.1', port, path }, (res) => {
          res.resume();
          resolve(res.statusCode);
        });
        req.once('error', reject).end();
      });
    const statuses = [];
    for (const path of paths) statuses.push(await statusOf(path));
    return statuses;
  } finally {
    server.close();
  }
}

/** The statuses of `paths` asked in turn of an app serving `private/secret.txt` with `express.static`. */
function staticStatuses(rulesText: string, descriptors: string[][], paths: readonly string[]) {
  const root = mkdtempSync(join(tmpdir(), 'sluice-static-'));
  mkdirSync(join(root, 'private'));
  writeFileSync(join(root, 'private', 'secret.txt'), 'SECRET');
  const app = express();
  app.use(rateLimit({ rules: parseRules(rulesText), descriptors, clock: clockAt(0), logger: collectingLogger() }));
  app.use(express.static(root));
  return statusesOf(app, paths);
}

// Kept as routers read them, dot segments let a client past a rule on a file `express.static`
// serves: it resolves `/public/../private/secret.txt` to `private/secret.txt`.
it('Express, files served by express.static: a rule on their path holds for a path that reaches them through ..', async () => {
  const privateRules = `
domain: api
descriptors:
  - key: path
    value: /private/*
    share_threshold: true
    rate_limit: { unit: hour, requests_per_unit: 1 }
`;
  const paths = [
    '/private/secret.txt',
    '/public/../private/secret.txt',
    '/public/%2e%2e/private/secret.txt',
    // `parseurl` reads the path before a `#`, each `\\` in it as `/`.
    '/public\\..\\private/secret.txt#',
    '/private/secret.txt#x',
    // `url.parse`, which `parseurl` hands these to, reads `\\` as `/` and `//a@b` as an authority.
    'http://h/private\\secret.txt',
    'http://h/public\\..\\private\\secret.txt',
    '//a@b/private/secret.txt#',
    // Dot segments around a `//user@host` run the static server keeps as part of the path.
    '/a/../private//u@h/../secret.txt#',
  ];
  expect(await staticStatuses(privateRules, [['path']], paths)).toEqual([200, 429, 429, 429, 429, 429, 429, 429, 429]);
});

// Each reading of a path is a request of its own to pass: taken together, a quota_mode rule the
// path as sent matched outvoted the one the file served is under, and a rule matched as sent
// that replaces the per-client limit dropped it for the private file.
it.each([
  [
    'a quota_mode rule matched as sent does not outvote one matched as resolved',
    `
  - key: path
    value: /private/*
    share_threshold: true
    quota_mode: true
    rate_limit: { unit: hour, requests_per_unit: 1 }
  - key: path
    value: /public/*
    share_threshold: true
    quota_mode: true
    rate_limit: { unit: hour, requests_per_unit: 100 }`,
    [['path']],
    ['/private/secret.txt', '/public/../private/secret.txt'],
    [200, 429],
  ],
  [
    'a rule matched as sent does not drop, for the file served, the rule it replaces',
    `
  - key: remote_address
    rate_limit: { unit: hour, requests_per_unit: 1, name: per-client }
  - key: path
    value: /public/*
    rate_limit: { unit: hour, requests_per_unit: 100, replaces: [{ name: per-client }] }`,
    [['remote_address'], ['path']],
    ['/private/secret.txt', '/private/secret.txt', '/public/../private/secret.txt'],
    [200, 429, 429],
  ],
])(
  'Express, express.static behind rules on a path read two ways: %s',
  async (_, descriptorsText, descriptors, paths, expected) => {
    expect(await staticStatuses(`domain: api\ndescriptors:${descriptorsText}\n`, descriptors, paths)).toEqual(expected);
  },
);

// Read two ways, one rule was matched twice: a shared counter was charged twice (a limit of one
// refused the first request for good), a per-path counter listed its policy twice, and a
// quota_mode rule passed what one reading refused.
it.each([
  ['a shared counter', 'share_threshold: true', 1, [200, 429, 429]],
  ['a counter per path', '', 1, [200, 429, 429]],
  ['a quota_mode rule', 'quota_mode: true', 1, [200, 429, 429]],
] as const)('Express, a path read two ways counts once on %s', async (_, option, limit, expected) => {
  const rules = parseRules(`
domain: api
descriptors:
  - key: path
    value: /private/*
    ${option}
    rate_limit: { unit: hour, requests_per_unit: ${limit} }
`);
  const logger = collectingLogger();
  const app = express();
  app.use(rateLimit({ rules, descriptors: [['path']], clock: clockAt(0), logger }));
  app.use((_req, res) => {
    res.send('ok');
  });
  const server = app.listen(0, '127.0.0.1');
  await once(server, 'listening');
  try {
    const { port } = server.address() as AddressInfo;
    const statusOf = (path: string) =>
      new Promise<{ status: number | undefined; policy: unknown }>((resolve, reject) => {
        get({ host: '127.0.0.1', port, path }, (res) => {
          res.resume();
          resolve({ status: res.statusCode, policy: res.headers['ratelimit-policy'] });
        }).once('error', reject);
      });
    const seen = [];
    for (const path of ['/private/./a.txt', '/private/a.txt', '/private/x/../a.txt']) seen.push(await statusOf(path));
    expect(seen.map((s) => s.status)).toEqual(expected);
    expect(seen[0]?.policy).toBe(`"per-hour";q=${limit};w=3600`);
    expect(logger.codes()).toEqual([]);
  } finally {
    server.close();
  }
});

// Read from the headers as sent, a header the app's own auth middleware set was not seen: the
// per-user rule limited what the client claimed, or nothing.
it("Express: header.<name> reads a value the app's middleware set on req.headers", async () => {
  const perUser = parseRules(`
domain: api
descriptors:
  - key: header.x-user
    rate_limit: { unit: minute, requests_per_unit: 1 }
`);
  const app = express();
  app.use((req, _res, next) => {
    if (req.headers['x-token'] === 'good') req.headers['x-user'] = 'verified-bob';
    next();
  });
  app.use(
    rateLimit({ rules: perUser, descriptors: [['header.x-user']], clock: clockAt(0), logger: collectingLogger() }),
  );
  app.get('/', (_req, res) => {
    res.send('ok');
  });
  await request(app).get('/').set('x-token', 'good').expect(200);
  await request(app).get('/').set('x-token', 'good').set('x-user', 'someone-else').expect(429);
});

// A `//user@host` run is part of the path a wildcard route reaches: read away, `/files//u@h#`
// was the path `/files`, which a `/files/*` rule does not match.
it('Express, a wildcard route: a user@host run stays part of the path it reaches', async () => {
  const files = parseRules(`
domain: api
descriptors:
  - key: path
    value: /files/*
    share_threshold: true
    rate_limit: { unit: hour, requests_per_unit: 1 }
`);
  const app = express();
  app.use(rateLimit({ rules: files, descriptors: [['path']], clock: clockAt(0), logger: collectingLogger() }));
  app.get('/files/*splat', (_req, res) => {
    res.send('file');
  });
  expect(await statusesOf(app, ['/files/a', '/files//u@h#', 'http://h/files//u@h'])).toEqual([200, 429, 429]);
});

// A router mounted at a path reads the rest of the URL through `parseurl` again, to which a
// `//user@host` there is an authority: `/api//u@h/login#` reached the router's `/login`, and the
// rule on `/api/login` read `/api/u@h/login`.
it('Express, a router mounted at a path: a rule on the full path holds for a user@host spelling', async () => {
  const mounted = parseRules(`
domain: api
descriptors:
  - key: path
    value: /api/login
    rate_limit: { unit: hour, requests_per_unit: 1 }
  - key: path
    value: /api/users/*
    share_threshold: true
    rate_limit: { unit: hour, requests_per_unit: 1 }
`);
  const app = express();
  app.use(rateLimit({ rules: mounted, descriptors: [['path']], clock: clockAt(0), logger: collectingLogger() }));
  app.use(
    '/api',
    express
      .Router()
      .get('/login', (_req, res) => {
        res.send('login');
      })
      .get('/users/:id', (_req, res) => {
        res.send('user');
      }),
  );
  const paths = ['/api/login', '/api//u@h/login#', '/api/\\u@h\\login#', '/api/users/1', '/api//u@h/users/..#'];
  expect(await statusesOf(app, paths)).toEqual([200, 429, 429, 200, 429]);
});

// A static server mounted at a path reads the rest through `url.parse` again, which ends a
// `//user@host` run's host at a `%` (or `;`, `'`, …): `/files//u@h%70rivate/secret.txt#` served
// `private/secret.txt` while the path read `/files/u@hprivate/secret.txt`.
it('Express, express.static mounted at a path: a rule holds for what follows a user@host run', async () => {
  const root = mkdtempSync(join(tmpdir(), 'sluice-static-'));
  mkdirSync(join(root, 'private'));
  writeFileSync(join(root, 'private', 'secret.txt'), 'SECRET');
  const files = parseRules(`
domain: api
descriptors:
  - key: path
    value: /files/private/*
    share_threshold: true
    rate_limit: { unit: hour, requests_per_unit: 1 }
`);
  const app = express();
  app.use(rateLimit({ rules: files, descriptors: [['path']], clock: clockAt(0), logger: collectingLogger() }));
  app.use('/files', express.static(root));
  const paths = [
    '/files/private/secret.txt',
    '/files//u@h%70rivate/secret.txt#',
    '/files//u@h%2Fprivate/secret.txt#',
    '/files//u@h;x/../private/secret.txt#',
  ];
  expect(await statusesOf(app, paths)).toEqual([200, 429, 429, 429]);
});
