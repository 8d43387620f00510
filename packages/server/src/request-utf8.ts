import { isAscii, isUtf8 } from 'node:buffer';
import { eachField } from './wire-format.js';

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
 * of bytes the decoder has already taken (`eachField`), skipping every other field; a
 * group's fields are not the message's own.
 */
export function invalidUtf8Field(bytes: Uint8Array): string | undefined {
  // Bytes all below 0x80 are ASCII throughout: every string in them is UTF-8. That is nearly
  // every request (short fields, lengths in one byte), read at once instead of walked (2 µs).
  if (isAscii(bytes)) return undefined;
  const walk = (start: number, end: number, fields: Fields, path: string): string | undefined => {
    const seen = new Map<number, number>();
    let found: string | undefined;
    eachField(bytes, start, end, (wire) => {
      const field = wire.inGroup || wire.wireType !== 2 ? undefined : fields[wire.number];
      if (field === undefined) return true;
      const name = path === '' ? field.name : `${path}.${field.name}`;
      if (field.fields === undefined) {
        if (!isUtf8(bytes.subarray(wire.start, wire.end))) found = name;
      } else {
        const index = seen.get(wire.number) ?? 0;
        seen.set(wire.number, index + 1);
        found = walk(wire.start, wire.end, field.fields, `${name}[${index}]`);
      }
      return found === undefined;
    });
    return found;
  };
  return walk(0, bytes.length, request, '');
}
