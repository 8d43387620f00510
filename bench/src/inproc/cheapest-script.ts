/**
 * The cheapest script a store like sluice's could send for a decision over one or three
 * policies of one algorithm: it takes the calls sluice's Redis client makes (its keys, its
 * arguments, one run of decisions per call, as many as the client batched) and answers in
 * sluice's reply, decides with the algorithm's arithmetic written inline, and does nothing
 * else: no other version's state read, no elastic capacity, no queue, no TTL kept, no check of
 * what it is given. Its state comes in two encodings. In binary, the fewest numbers the
 * algorithm needs per policy, all read by one `struct.unpack` and written by one `struct.pack`:
 * a store could not decide several policies for less, so a further policy's cost there is the
 * least it can cost. In the text layout sluice kept before (each policy's head, its numbers,
 * units spent and reset time, written with `%d`, read by finding the head and one pattern):
 * the least a further policy can cost in such a layout.
 *
 * Arguments as sluice's scripts read them (`packages/redis/src/lua/prelude.ts`): the run's
 * header '<decisions> consume <cost> <kinds>' (one kind, or three joined by commas), the heads,
 * then the figures.
 */

/** What an algorithm keeps and decides, per policy `i`, over the locals the script gives it. */
interface Shape {
  /** The state's numbers, fresh when the client has no state. */
  readonly state: (i: number) => { names: string[]; fresh: string[] };
  /**
   * Statements deciding policy `i` for `cost` at `now` from its state and its figures
   * (`limit${i}`, `window${i}`), leaving `ok${i}`, `remaining${i}`, `reset${i}`, `wait${i}`
   * (whole numbers) and the next state's numbers `next${i}` for the write.
   */
  readonly decide: (i: number) => string;
  /** The next state's numbers, as the write packs them. */
  readonly next: (i: number) => string[];
  /** The state in sluice's earlier text layout: the format of its numbers and the pattern that reads them. */
  readonly text: {
    readonly format: string;
    readonly pattern: string;
    /** Statements setting the state's numbers from the pattern's captures `c1`, `c2`, …. */
    readonly read: (i: number) => string;
    /** The numbers the format writes: the next state's, then units spent and reset time. */
    readonly write: (i: number) => string[];
  };
}

/** Whole part of a non-negative Lua number, inline (`math.floor` is a C call). */
const whole = (x: string) => `(${x}) - (${x}) % 1`;

/** GCRA: one number a policy, its theoretical arrival time. */
const gcra: Shape = {
  state: (i) => ({ names: [`tat${i}`], fresh: ['now'] }),
  decide: (i) => `if tat${i} < now then tat${i} = now end
local step${i} = window${i} / limit${i}
local next${i} = tat${i} + step${i} * cost
local ahead${i} = next${i} - now
local ok${i} = ahead${i} <= window${i}
local remaining${i}, reset${i}, wait${i} = 0, ${whole(`ahead${i}`)} + 1, 0
if ok${i} then remaining${i} = ${whole(`(window${i} - ahead${i}) / step${i}`)} else wait${i} = ${whole(`ahead${i} - window${i}`)} + 1 end`,
  next: (i) => [`next${i}`],
  // sluice keeps the time in whole ms and its fraction as two numbers.
  text: {
    format: '%d,%d;%d,%d',
    pattern: '^(%d+),(%d+);%d+,%d+',
    read: (i) => `tat${i} = c1 + c2 / 1000000`,
    write: (i) => [whole(`next${i}`), whole(`next${i} % 1 * 1000000`), `limit${i} - remaining${i}`, `now + reset${i}`],
  },
};

/** The sliding window counter: the window's start, the last window's count and this one's. */
const slidingWindowCounter: Shape = {
  state: (i) => ({ names: [`start${i}`, `last${i}`, `this${i}`], fresh: ['0', '0', '0'] }),
  decide: (i) => `local now_start${i} = now - now % window${i}
if start${i} ~= now_start${i} then
  if start${i} == now_start${i} - window${i} then last${i} = this${i} else last${i} = 0 end
  this${i}, start${i} = 0, now_start${i}
end
local into${i} = now - now_start${i}
local used${i} = ${whole(`last${i} * (window${i} - into${i}) / window${i}`)} + this${i}
local ok${i} = used${i} + cost <= limit${i}
local remaining${i}, reset${i}, wait${i} = 0, 2 * window${i} - into${i}, 0
if ok${i} then this${i} = this${i} + cost; remaining${i} = limit${i} - used${i} - cost else wait${i} = window${i} - into${i} end`,
  next: (i) => [`start${i}`, `last${i}`, `this${i}`],
  text: {
    format: '%d,%d,%d;%d,%d',
    pattern: '^(%d+),(%d+),(%d+);%d+,%d+',
    read: (i) => `start${i}, last${i}, this${i} = c1 + 0, c2 + 0, c3 + 0`,
    write: (i) => [`start${i}`, `last${i}`, `this${i}`, `limit${i} - remaining${i}`, `now + reset${i}`],
  },
};

export const cheapestShapes = { gcra, 'sliding-window-counter': slidingWindowCounter } as const;
export type CheapestAlgorithm = keyof typeof cheapestShapes;

const numbered = (count: number) => Array.from({ length: count }, (_, index) => index + 1);

export type Encoding = 'binary' | 'text';

/** Reads the client's `text` into the state's numbers, each policy's found by its head in text. */
function readText(shape: Shape, policies: readonly number[]): string {
  const captures = shape.text.format.split('%d').length - 3;
  const names = Array.from({ length: captures }, (_, k) => `c${k + 1}`).join(', ');
  return policies
    .map(
      (i) => `local at${i} = find(text, head${i}, 1, true)
if at${i} then
  local _, _, ${names} = find(text, '${shape.text.pattern}', at${i} + #head${i})
  if c1 then ${shape.text.read(i)} end
end`,
    )
    .join('\n');
}

/**
 * Each policy's windowMs and limit from the figures entry as sluice sends it
 * (`packages/redis/src/figures.ts`): per policy its windowMs and capacity, then per policy its
 * limit and maxDelayMs unless every limit is its capacity (the short entry), each figure two
 * 7-byte numbers, low and high, read as low - 5 * 0x01010101010101 + 4 * high; all unpacked
 * at once, as sluice's own script does. The entry's last item (where sluice's states start in
 * its own layout) is not read.
 */
function readFigures(count: number): string[] {
  const figure = (pair: number) => `f${2 * pair + 1} - ${5 * Number(0x01010101010101n)} + f${2 * pair + 2} * 4`;
  const unpack = (figures: number) =>
    `local ${numbered(2 * figures)
      .map((k) => `f${k}`)
      .join(', ')} = struct.unpack('<${'I7'.repeat(2 * figures)}', ARGV[3])`;
  const limits = (limitAt: (i: number) => number) =>
    numbered(count).map((i) => `  window${i}, limit${i} = ${figure(2 * i - 2)}, ${figure(limitAt(i))}`);
  return [
    `local ${numbered(count)
      .map((i) => `window${i}, limit${i}`)
      .join(', ')}`,
    `if #ARGV[3] < ${2 * 7 * 4 * count} then`,
    `  ${unpack(2 * count)}`,
    ...limits((i) => 2 * i - 1),
    'else',
    `  ${unpack(4 * count)}`,
    ...limits((i) => 2 * count + 2 * i - 2),
    'end',
  ];
}

/** Each policy's head, for the text layout: the heads entry holds them back to back. */
const readHeads = (count: number): string =>
  `local ${numbered(count)
    .map((i) => `head${i}`)
    .join(', ')} = string.match(ARGV[2], '^${'( [^ ]+)'.repeat(count)}$')`;

/** The block deciding a call's decisions over `count` policies, written out for that count. */
function block(shape: Shape, count: number, encoding: Encoding): string {
  const policies = numbered(count);
  const states = policies.map(shape.state);
  const names = states.flatMap((s) => s.names);
  const nexts = policies.flatMap(shape.next);
  const figures = [...readFigures(count), ...(encoding === 'text' ? [readHeads(count)] : [])];
  const read =
    encoding === 'binary'
      ? `if #text == ${8 * names.length} then ${names.join(', ')} = struct.unpack('<${'d'.repeat(names.length)}', text) end`
      : readText(shape, policies);
  const value =
    encoding === 'binary'
      ? `struct.pack('<${'d'.repeat(nexts.length)}', ${nexts.join(', ')})`
      : policies
          .map((i) => `head${i} .. format('${shape.text.format}', ${shape.text.write(i).join(', ')})`)
          .join(' .. ');
  const outcomes = policies.map(
    (i) =>
      `reply[n + 1], reply[n + 2], reply[n + 3] = remaining${i}, reset${i}, ok${i} and wait${i} or -1 - wait${i}\n    n = n + 3`,
  );
  const ttl = policies.map((i) => `if reset${i} > ttl then ttl = reset${i} end`);
  return `${figures.join('\n  ')}
  for d = 1, decisions do
    local text = texts[d]
    local ${names.join(', ')} = ${states.flatMap((s) => s.fresh).join(', ')}
    if text then
      ${read.replaceAll('\n', '\n      ')}
    end
    ${policies.map(shape.decide).join('\n').replaceAll('\n', '\n    ')}
    if cost > 0 and ${policies.map((i) => `ok${i}`).join(' and ')} then
      local ttl = 1
      ${ttl.join('\n      ')}
      redis.call('PSETEX', KEYS[d], ttl, ${value})
    end
    ${outcomes.join('\n    ')}
  end`;
}

/** The whole script for `algorithm` with its state in `encoding`, for limiters of one or three policies. */
export function cheapestScript(algorithm: CheapestAlgorithm, encoding: Encoding): string {
  const shape = cheapestShapes[algorithm];
  return `-- the cheapest ${algorithm} decision, state in ${encoding}: see bench/src/inproc/cheapest-script.ts
local find, format = string.find, string.format
local header = ARGV[1]
local first, second = string.byte(header, 1, 2)
local decisions = first - 48
if second ~= 32 then decisions = string.sub(header, 1, find(header, ' ', 1, true) - 1) + 0 end
local count, cost = 1, 1
if find(header, ',', 1, true) then count = 3 end
if find(header, ' consume 1 ', 1, true) == nil then error('the cheapest script decides cost 1 only') end
local time = redis.call('TIME')
local now = time[1] * 1000 + (time[2] - time[2] % 1000) / 1000
local texts
if decisions == 1 then texts = { redis.call('GET', KEYS[1]) } else texts = redis.call('MGET', unpack(KEYS, 1, decisions)) end
local reply, n = { now }, 1
if count == 1 then
  ${block(shape, 1, encoding)}
elseif count == 3 then
  ${block(shape, 3, encoding)}
else
  error('the cheapest script decides one or three policies')
end
return struct.pack('<' .. string.rep('d', n), unpack(reply))`;
}
