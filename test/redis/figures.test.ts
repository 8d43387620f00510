import { toPolicy } from '@sluice/core';
import fc from 'fast-check';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decisionArgs } from '../../packages/redis/src/decision-args.js';
import {
  FIGURE_BYTES,
  FULL_FIGURES,
  figureLua,
  figuresFormat,
  figuresFormatLua,
  figureText,
  OFFSET_FORMAT,
  SHORT_FIGURES,
} from '../../packages/redis/src/figures.js';
import { connectRedis, standaloneRedis } from '../helpers/redis-env.js';

const target = await standaloneRedis();

/** Reads every figure of ARGV[1] as the scripts do: one unpack, then each figure from its two halves. */
const readFigures = `
local v = { struct.unpack(${figuresFormatLua(`#ARGV[1] / ${FIGURE_BYTES}`)}, ARGV[1]) }
local figures = {}
for i = 1, (#v - 1) / 2 do
  local low, high = v[2 * i - 1], v[2 * i]
  figures[i] = string.format('%.0f', ${figureLua('low', 'high')})
end
return figures`;

/** The figures entry's last item, read as the scripts read it: after `figures` figures, by `Bc0`. */
const readOffset = `local v = { struct.unpack(${figuresFormatLua('ARGV[2]')} .. '${OFFSET_FORMAT}', ARGV[1]) }
return { v[#v - 1], v[#v] }`;

const usual = toPolicy({ name: 'second', limit: 5, window: '1s', algorithm: 'gcra' }, 'policies[0]');
const queued = toPolicy(
  { name: 'minute', limit: 100, window: '1m', algorithm: 'gcra', queue: { maxDelayMs: 250 } },
  'policies[1]',
);
const request = (policies: ReturnType<typeof toPolicy>[], capacities = policies.map((p) => p.limit)) => ({
  namespace: 'figures',
  key: 'client',
  cost: 1,
  now: undefined,
  policies,
  capacities,
});

const edges = [0, 1, 3, 4, 63, 64, 255, 256, 1000, 60_000, 86_400_000, 2 ** 32 - 1, 2 ** 48, 2 ** 53 - 1];

describe('figures as the scripts receive them', () => {
  it('are text of bytes 1 to 64 only, so UTF-8 leaves them as they are and no byte is 0', () => {
    fc.assert(
      fc.property(fc.maxSafeNat(), (x) => {
        const text = figureText(x);
        expect(text).toHaveLength(FIGURE_BYTES);
        expect(Buffer.from(text, 'utf8')).toHaveLength(FIGURE_BYTES);
        for (const code of Buffer.from(text, 'utf8')) expect(code >= 1 && code <= 64).toBe(true);
      }),
    );
    expect(figuresFormat(2)).toBe('<I7I7I7I7');
  });

  it('leave out every limit and maxDelayMs only when each limit is its capacity and each maxDelayMs 0', () => {
    const entry = (policies: ReturnType<typeof toPolicy>[], capacities?: number[]) =>
      decisionArgs('consume', request(policies, capacities))[2] as string;
    const offsetBytes = (heads: string) => String(heads.length + 2).length + 1;
    const heads = (policies: ReturnType<typeof toPolicy>[]) => decisionArgs('consume', request(policies))[1] as string;
    expect(entry([usual])).toHaveLength(FIGURE_BYTES * SHORT_FIGURES + offsetBytes(heads([usual])));
    // A queue (maxDelayMs) on one policy, or a capacity raised above the limit, sends them all.
    expect(entry([usual, queued])).toHaveLength(FIGURE_BYTES * FULL_FIGURES * 2 + offsetBytes(heads([usual, queued])));
    expect(entry([usual], [8])).toHaveLength(FIGURE_BYTES * FULL_FIGURES + offsetBytes(heads([usual])));
  });

  describe.skipIf(target.skip)('read back in Redis', () => {
    let client: Redis;
    beforeAll(async () => {
      client = await connectRedis(target.require());
    });
    afterAll(() => client?.disconnect());

    it('is every whole number below 2^53 exactly, the edges and random ones', async () => {
      const randoms = fc.sample(fc.maxSafeNat(), 200);
      const numbers = [...edges, ...randoms];
      const read = (await client.eval(readFigures, 0, numbers.map(figureText).join(''))) as string[];
      expect(read.map(Number)).toEqual(numbers);
    });

    it("ends with the directory's length (its two marks and the heads), read as text by the figures' unpack", async () => {
      for (const [policies, figures] of [
        [[usual], SHORT_FIGURES],
        [[usual, queued], 2 * FULL_FIGURES],
      ] as const) {
        const [, heads, entry] = decisionArgs('consume', request([...policies]));
        const [offset, end] = (await client.eval(readOffset, 0, entry as string, String(figures))) as [string, number];
        expect(offset).toBe(String((heads as string).length + 2));
        expect(end).toBe((entry as string).length + 1);
      }
    });
  });
});
