import fc from 'fast-check';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  FIGURE_BYTES,
  figureLua,
  figuresFormat,
  figuresFormatLua,
  figureText,
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
  });
});
