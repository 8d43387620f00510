import { type ChildProcess, fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { algorithmNames } from '@sluice/core';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectRedis, deleteKeys, standaloneRedis } from '../helpers/redis-env.js';
import { storedState } from '../helpers/redis-state.js';
import type { ChildMessage, ConcurrencyJob } from './concurrency-child.js';

const target = await standaloneRedis();
const PROCESSES = 4;
const CONSUMERS = 200;
const LIMIT = 300;

function nextMessage(child: ChildProcess): Promise<ChildMessage> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('child process did not answer in 30 s')), 30_000);
    child.once('message', (message: ChildMessage) => {
      clearTimeout(timer);
      if ('error' in message) reject(new Error(message.error));
      else resolve(message);
    });
    child.once('exit', (code) => reject(new Error(`child process exited with ${code}`)));
  });
}

describe.skipIf(target.skip)(`${PROCESSES} processes × ${CONSUMERS} concurrent consumers on one key`, () => {
  const prefix = `sluice-test:${randomUUID()}:`;
  let admin: Redis | undefined;
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    admin = await connectRedis(target.require());
  });

  afterAll(async () => {
    for (const child of children) child.kill();
    if (admin === undefined) return;
    await deleteKeys(admin, prefix);
    admin.disconnect();
  });

  it('admit exactly the limit, never one more, for every algorithm and a mixed policy set', async () => {
    const script = fileURLToPath(new URL('./concurrency-child.ts', import.meta.url));
    for (let i = 0; i < PROCESSES; i++) {
      children.push(
        fork(script, [], { execArgv: ['--conditions=@sluice/source', '--import', 'tsx'], cwd: process.cwd() }),
      );
    }
    const job: ConcurrencyJob = {
      url: target.require(),
      prefix,
      consumers: CONSUMERS,
      limit: LIMIT,
      algorithms: algorithmNames,
      now: 1_700_000_000_000,
    };
    const ready = children.map((child) => nextMessage(child));
    for (const child of children) child.send(job);
    await Promise.all(ready);
    const done = children.map((child) => nextMessage(child));
    for (const child of children) child.send('go');
    const results = (await Promise.all(done)) as { allowed: Record<string, number>; decided: Record<string, number> }[];

    const total = (name: string) => results.reduce((sum, r) => sum + (r.allowed[name] ?? Number.NaN), 0);
    for (const algorithm of algorithmNames) expect(total(algorithm), algorithm).toBe(LIMIT);
    expect(total('mixed')).toBe(Math.floor(LIMIT / 3));
    // Every request of every process was decided by Redis, far more than the limit admits.
    for (const r of results) for (const name of Object.keys(r.allowed)) expect(r.decided[name]).toBe(CONSUMERS);
    const client = admin as Redis;
    expect((await storedState(client, `${prefix}{fixed-window|hot}`, '_0'))?.[1]).toBe(LIMIT);
    expect((await storedState(client, `${prefix}{mixed|hot}`, 'wide'))?.[1]).toBe(Math.floor(LIMIT / 3));
    const log = await client.lrange(`${prefix}{mixed|hot}:log`, 0, -1);
    expect(log).toEqual(['1700000000000', String(Math.floor(LIMIT / 3))]);
  }, 60_000);
});
