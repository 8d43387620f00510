import { isAscii, isUtf8 } from 'node:buffer';

/** A field the check looks at: a string, or a message (each one here is repeated) holding some. */
interface Field {
  readonly name: string;
  readonly fields?: Fields;
}
type Fields = Readonly<Partial<Record<number, Field>>>;

/** The strings a decision reads, by field number in rls.proto and ratelimit.proto. */
const entry: Fields = { 1: { name: 'key' }, 2: { name: 'value' } };
const descriptor: Fields = { 1: { name: 'entries', fields: entry } };
const request: Fields = { 1: { name: 'domain' }, 2: { name: 'descriptors', fields: descriptor } };

/**
 * The first of a `RateLimitRequest`'s domain, keys and values whose bytes are not UTF-8, as a
 * path (`descriptors[0].entries[1].value`), or `undefined`. The gRPC decoder reads such bytes
 * as U+FFFD, so `\xff`, `\xfe` and a real U+FFFD would count as one value; proto3 holds a
 * `string` to UTF-8, and Go's protobuf refuses the message. It reads the wire format
 * (https://protobuf.dev/programming-guides/encoding/) of bytes the decoder has already taken,
 * skipping every other field; a group's fields are not the message's own.
 */
export function invalidUtf8Field(bytes: Uint8Array): string | undefined {
  // Bytes all below 0x80 are ASCII throughout: every string in them is UTF-8. That is nearly
  // every request (short fields, lengths in one byte), read at once instead of walked (2 µs).
  if (isAscii(bytes)) return undefined;
  let at = 0;
  const varint = (): number => {
    let value = 0;
    for (let scale = 1; ; scale *= 128) {
      const byte = bytes[at++] ?? 0;
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) return value;
    }
  };

  const walk = (end: number, fields: Fields, path: string): string | undefined => {
    const seen = new Map<number, number>();
    let groups = 0;
    while (at < end) {
      const tag = varint();
      switch (tag % 8) {
        case 0:
          varint();
          continue;
        case 1:
          at += 8;
          continue;
        case 3:
          groups++;
          continue;
        case 4:
          groups--;
          continue;
        case 5:
          at += 4;
          continue;
        case 2:
          break;
        default:
          return undefined; // no such wire type: the decoder has refused the message already
      }
      const length = varint();
      const start = at;
      const number = Math.floor(tag / 8);
      const field = groups === 0 ? fields[number] : undefined;
      if (field !== undefined) {
        const name = path === '' ? field.name : `${path}.${field.name}`;
        if (field.fields === undefined) {
          if (!isUtf8(bytes.subarray(start, start + length))) return name;
        } else {
          const index = seen.get(number) ?? 0;
          seen.set(number, index + 1);
          const found = walk(start + length, field.fields, `${name}[${index}]`);
          if (found !== undefined) return found;
        }
      }
      at = start + length;
    }
    return undefined;
  };
  return walk(bytes.length, request, '');
}
