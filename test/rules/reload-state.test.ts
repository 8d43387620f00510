import { writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rateLimit } from '@sluice/express';
import { type RulesWatcher, watchRules } from '@sluice/rules';
import express from 'express';
import request from 'supertest';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { clockAt, draft11 } from '../adapters/helpers.js';

const perClient = (limit: number) =>
  `  - key: remote_address\n    policies: [{ name: per-client, limit: ${limit}, window: 1m, algorithm: fixed-window }]\n`;
const perUser = (limit: number) =>
  `  - key: header.x-user\n    policies: [{ name: per-user, limit: ${limit}, window: 1m, algorithm: fixed-window }]\n`;
const doc = (...descriptors: string[]) => `domain: api\ndescriptors:\n${descriptors.join('')}`;

describe('rules across reloads (state is kept per rule and policy name)', () => {
  let dir: string;
  let file: string;
  let watcher: RulesWatcher | undefined;
  let server: ReturnType<express.Express['listen']> | undefined;
  let url = '';

  const start = async (text: string) => {
    writeFileSync(file, text);
    // File events are left to their own test; here each change is applied with reload().
    watcher = watchRules(file, { debounceMs: 60_000 });
    const app = express();
    app.use(rateLimit({ rules: watcher, descriptors: [['remote_address'], ['header.x-user']], clock: clockAt(0) }));
    app.get('/', (_req, res) => {
      res.send('ok');
    });
    server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server?.once('listening', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  };
  const change = async (text: string) => {
    writeFileSync(file, text);
    await watcher?.reload();
  };
  const get = () => request(url).get('/').set('x-user', 'ada');

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-reload-'));
    file = join(dir, 'rules.yaml');
  });
  afterEach(async () => {
    await watcher?.close();
    await new Promise((resolve) => server?.close(resolve));
    await rm(dir, { recursive: true, force: true });
  });

  it('a changed limit keeps each client count; a removed rule stops limiting; a new rule starts fresh', async () => {
    await start(doc(perClient(5)));
    for (const left of [4, 3, 2]) expect(draft11(await get().expect(200)).state['per-client']?.r).toBe(left);
    await change(doc(perClient(4)));
    expect(draft11(await get().expect(200)).state['per-client']?.r).toBe(0);
    await get().expect(429);
    await change(doc(perUser(2)));
    const passed = await get().expect(200);
    expect(Object.keys(draft11(passed).state)).toEqual(['per-user']);
    expect(draft11(passed).state['per-user']?.r).toBe(1);
    await get().expect(200);
    await get().expect(429);
    // Back in place, the first rule finds its count where it was left.
    await change(doc(perClient(5), perUser(10)));
    expect(draft11(await get().expect(200)).state['per-client']?.r).toBe(0);
    await get().expect(429);
  });

  it('a changed window or algorithm keeps what each client has spent: never a fresh quota', async () => {
    await start(doc(perClient(2)));
    await get().expect(200);
    await get().expect(200);
    await get().expect(429);
    await change(doc(perClient(2).replace('window: 1m', 'window: 2m')));
    await get().expect(429);
    await change(doc(perClient(2).replace('algorithm: fixed-window', 'algorithm: gcra')));
    await get().expect(429);
    // A larger limit in the new window admits what it adds, and no more.
    await change(doc(perClient(3).replace('window: 1m', 'window: 2m')));
    expect(draft11(await get().expect(200)).state['per-client']?.r).toBe(0);
    await get().expect(429);
  });

  it('100 reloads under load: no request dropped, none ever sees half a set', async () => {
    // Each version gives both rules the same limit, so a response from a half-built set would show two.
    const version = (n: number) => doc(perClient(1_000_000 + n), perUser(1_000_000 + n));
    await start(version(0));
    const agent = request.agent(url);
    const limitsSeen = new Set<number>();
    for (let n = 1; n <= 100; n++) {
      writeFileSync(file, version(n));
      const inFlight = Array.from({ length: 5 }, () => agent.get('/').set('x-user', 'ada'));
      const [, ...responses] = await Promise.all([watcher?.reload(), ...inFlight]);
      for (const res of responses) {
        expect(res.status).toBe(200);
        const { policy } = draft11(res);
        expect(policy['per-client']?.q).toBe(policy['per-user']?.q);
        limitsSeen.add(policy['per-client']?.q as number);
      }
    }
    expect(watcher?.reloads).toBe(100);
    expect(limitsSeen.size).toBeGreaterThan(1);
  });
});
