/**
 * A reader of the protobuf wire format (https://protobuf.dev/programming-guides/encoding/),
 * for the checks that look at a request's bytes before or beside the decoder: each field's
 * number, its wire type and, for a length-delimited one, where its bytes lie.
 */
export interface WireField {
  readonly number: number;
  /** 2 for a length-delimited field, whose bytes are `start` to `end`; of any other, its value's bytes. */
  readonly wireType: number;
  readonly start: number;
  readonly end: number;
  /** Inside a group: the group's fields are not the message's own. */
  readonly inGroup: boolean;
}

/** The most bytes the decoder reads a tag or a length in: it keeps a uint32, and reads more another way. */
const MOST_VARINT32_BYTES = 5;

/**
 * Calls `visit` with each field from `start` to `end`, of every wire type, until it returns
 * `false`. Returns `false` for bytes the decoder would read differently from this walk, which
 * the checks then cannot vouch for: a wire type that does not exist, a tag or a length past
 * a uint32 (the decoder keeps its low 32 bits), a field or a group running past `end` (the
 * decoder would read on into what follows, a length of 2^32 − 1 in a 9-byte request would
 * have this walk step through four billion bytes that are not there), an unmatched group end.
 * Otherwise `true`.
 */
export function eachField(
  bytes: Uint8Array,
  start: number,
  end: number,
  visit: (field: WireField) => boolean | undefined,
): boolean {
  let at = start;
  /** A varint's value, or -1 for one longer than `most` bytes. */
  const varint = (most: number): number => {
    let value = 0;
    for (let read = 1, scale = 1; ; read++, scale *= 128) {
      const byte = bytes[at++] ?? 0;
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) return value;
      if (read === most) return -1;
    }
  };
  let groups = 0;
  while (at < end) {
    const tag = varint(MOST_VARINT32_BYTES);
    if (tag < 0 || tag > 0xffff_ffff) return false;
    const wireType = tag % 8;
    const number = Math.floor(tag / 8);
    // A group's start is a field of the message it stands in; its end, one of the group.
    const inGroup = groups !== 0;
    const from = at;
    if (wireType === 0) varint(Number.POSITIVE_INFINITY);
    else if (wireType === 1) at += 8;
    else if (wireType === 3) groups++;
    else if (wireType === 4) groups--;
    else if (wireType === 5) at += 4;
    else if (wireType !== 2) return false;
    if (groups < 0) return false;
    if (wireType !== 2) {
      if (at > end) return false;
      if (visit({ number, wireType, start: from, end: at, inGroup }) === false) return true;
      continue;
    }
    const length = varint(MOST_VARINT32_BYTES);
    if (length < 0 || at + length > end) return false;
    const field = { number, wireType, start: at, end: at + length, inGroup };
    at += length;
    if (visit(field) === false) return true;
  }
  return groups === 0;
}
