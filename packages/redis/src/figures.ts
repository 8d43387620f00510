/**
 * The policies' figures travel to a script in one ARGV entry of whole numbers, each read by
 * one `struct.unpack` for all of them: a figure per entry cost Redis a string made and
 * interned on every call (some 900 instructions) and a conversion from text (some 750).
 *
 * The entry is sent as text: ioredis writes a call that has a Buffer argument through a slower
 * path (some 2 µs more a call in Node), so every byte stays in 1–64, the same in UTF-8, and
 * none is 0 (redis-benchmark replays a call from its command line, which cannot carry one).
 * A figure x below 2^53 is seven bytes b0…b6 (little-endian): it travels as two little-endian
 * 7-byte numbers, `low` of the bytes (bk mod 4) + 1 and `high` of the bytes ⌊bk / 4⌋ + 1, so
 * x = low − 5·C + 4·high, where C = 0x01010101010101 counts the +1 of each byte. Each term and
 * the result are whole numbers below 2^53 (b6 < 32 keeps `high` below 2^52), so a Lua number
 * holds every step exactly.
 */
const BYTES = 7;
export const FIGURE_BYTES = 2 * BYTES;

/** `5 · C`, written out: a Lua literal is parsed once, when Redis compiles the script. */
const OFFSET = 5 * Number(0x01010101010101n);

/** The text of figure `x`, a whole number in [0, 2^53), as a script's `struct.unpack` reads it. */
export function figureText(x: number): string {
  const low: number[] = [];
  const high: number[] = [];
  let rest = x;
  for (let k = 0; k < BYTES; k++) {
    const byte = rest % 256;
    low.push((byte % 4) + 1);
    high.push(Math.floor(byte / 4) + 1);
    rest = (rest - byte) / 256;
  }
  return String.fromCharCode(...low, ...high);
}

/** Figures a policy sends in full: windowMs, capacity, limit and maxDelayMs. */
export const FULL_FIGURES = 4;

/**
 * A Lua condition: whether the figures entry `entry` (a Lua expression) of `count` policies
 * (a Lua expression) sends every figure rather than the short entry's. The entry's last item
 * is shorter than a policy's short figures, so the lengths never meet.
 */
export const sendsAllFiguresLua = (entry: string, count: string): string =>
  `#${entry} >= ${FIGURE_BYTES * FULL_FIGURES} * ${count}`;

/**
 * Figures a policy sends in the short entry, windowMs and capacity: when every policy's limit
 * is its capacity and its maxDelayMs 0 (the usual limiter), a script reading all of them
 * unpacks half as many numbers (some 800 instructions a gcra call).
 */
export const SHORT_FIGURES = 2;

/**
 * The entry's last item: where the states' numbers start in a client's string of these
 * policies' states (the directory's length), as decimal text after a byte of its length, so
 * that the same `struct.unpack` that reads the figures reads it (format `Bc0`) as the string
 * SETRANGE takes: made by `format('%d', …)` in the script it cost some 1,000 instructions a
 * call. Its bytes are digits and a length of 1–16, so the entry stays in bytes 1–64.
 */
export function offsetText(offset: number): string {
  const digits = String(offset);
  return String.fromCharCode(digits.length) + digits;
}

/** The `struct.unpack` format of `offsetText`: its length, then the text that long. */
export const OFFSET_FORMAT = 'Bc0';

/** The `struct.unpack` format of `count` figures: two numbers each. */
export const figuresFormat = (count: number): string => `<${`I${BYTES}`.repeat(2 * count)}`;

/** The same format as a Lua expression, for a count (a Lua expression) the script learns as it runs. */
export const figuresFormatLua = (count: string): string => `'<' .. string.rep('I${BYTES}', 2 * (${count}))`;

/** A Lua expression of the figure whose two unpacked numbers are the locals `low` and `high`. */
export const figureLua = (low: string, high: string): string => `${low} - ${OFFSET} + ${high} * 4`;
