/**
 * A reader of the protobuf wire format (https://protobuf.dev/programming-guides/encoding/),
 * for the checks that look at a request's bytes before or beside the decoder: each field's
 * number, its wire type and, for a length-delimited one, where its bytes lie.
 */
export interface WireField {
  readonly number: number;
  /** 2 for a length-delimited field, whose bytes are `start` to `end` (0 to 0 for any other type). */
  readonly wireType: number;
  readonly start: number;
  readonly end: number;
  /** Inside a group: the group's fields are not the message's own. */
  readonly inGroup: boolean;
}

/**
 * Calls `visit` with each field from `start` to `end`, of every wire type, until it returns
 * `false`. Returns `false` for a wire type that does not exist (a message the decoder
 * refuses), else `true`.
 */
export function eachField(
  bytes: Uint8Array,
  start: number,
  end: number,
  visit: (field: WireField) => boolean | undefined,
): boolean {
  let at = start;
  const varint = (): number => {
    let value = 0;
    for (let scale = 1; ; scale *= 128) {
      const byte = bytes[at++] ?? 0;
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) return value;
    }
  };
  let groups = 0;
  while (at < end) {
    const tag = varint();
    const wireType = tag % 8;
    const number = Math.floor(tag / 8);
    // A group's start is a field of the message it stands in; its end, one of the group.
    const inGroup = groups !== 0;
    if (wireType === 0) varint();
    else if (wireType === 1) at += 8;
    else if (wireType === 3) groups++;
    else if (wireType === 4) groups--;
    else if (wireType === 5) at += 4;
    else if (wireType !== 2) return false;
    if (wireType !== 2) {
      if (visit({ number, wireType, start: 0, end: 0, inGroup }) === false) return true;
      continue;
    }
    const length = varint();
    const field = { number, wireType, start: at, end: at + length, inGroup };
    at += length;
    if (visit(field) === false) return true;
  }
  return true;
}
