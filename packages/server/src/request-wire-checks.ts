import { REQUEST_LIMITS } from './request-checks.js';
import { eachField } from './wire-format.js';

/** A field of rls.proto the check knows: its name, its wire type, and a message's own fields. */
interface KnownField {
  readonly name: string;
  /** 0 for a number (uint32, uint64, an enum), 2 for a string or a message. */
  readonly wireType: 0 | 2;
  /** A uint64: its varint may take 10 bytes, where the decoder reads a uint32's 5 and skips 5 more. */
  readonly wide?: boolean;
  readonly fields?: KnownFields;
  /** How many times it may come in its message (a repeated field's bound). */
  readonly most?: number;
}
type KnownFields = Readonly<Partial<Record<number, KnownField>>>;

const uint64Value: KnownFields = { 1: { name: 'value', wireType: 0, wide: true } };
const override: KnownFields = { 1: { name: 'requests_per_unit', wireType: 0 }, 2: { name: 'unit', wireType: 0 } };
const entry: KnownFields = { 1: { name: 'key', wireType: 2 }, 2: { name: 'value', wireType: 2 } };
const descriptor: KnownFields = {
  1: { name: 'entries', wireType: 2, fields: entry, most: REQUEST_LIMITS.entries },
  2: { name: 'limit', wireType: 2, fields: override },
  3: { name: 'hits_addend', wireType: 2, fields: uint64Value },
};
const request: KnownFields = {
  1: { name: 'domain', wireType: 2 },
  2: { name: 'descriptors', wireType: 2, fields: descriptor, most: REQUEST_LIMITS.descriptors },
  3: { name: 'hits_addend', wireType: 0 },
};

/**
 * Why a `RateLimitRequest`'s bytes are refused before the decoder runs, or `undefined`:
 * - more descriptors, or a descriptor more entries, than a call may have, found at the first
 *   one too many. Decoded first, 2,000,000 empty descriptors in a 4 MB message held the event
 *   loop 2.4 s before `toCall` refused them, and every other call waited;
 * - a field it knows sent with another wire type (a string as a number, say). The decoder
 *   reads each known field as its type whatever the wire says, and the checks that read the
 *   bytes (this one, the UTF-8 check) would read them another way: a value sent as a number
 *   passed the UTF-8 check, and descriptors sent so escaped the count (half a million held
 *   the loop 0.9 s). Envoy never sends such bytes; nor a uint32 in more than 5 bytes, which
 *   the decoder reads differently from a varint's own end.
 * Bytes this walk cannot read as the decoder does (`eachField`) throw, and grpc-js answers
 * `INTERNAL` as it does for any message its decoder refuses: a tag or length past a uint32 hid
 * descriptors from the count, and a length past the message's end held the loop for minutes.
 */
export function refusedBeforeDecoding(bytes: Uint8Array): string | undefined {
  let problem: string | undefined;
  const walk = (start: number, end: number, fields: KnownFields, path: string): void => {
    const seen = new Map<number, number>();
    const readable = eachField(bytes, start, end, (wire) => {
      const field = wire.inGroup ? undefined : fields[wire.number];
      if (field === undefined) return true;
      const index = seen.get(wire.number) ?? 0;
      seen.set(wire.number, index + 1);
      const name = `${path}${field.name}`;
      // A repeated field's path names the item: `descriptors[2]`.
      const item = field.most === undefined ? name : `${name}[${index}]`;
      if (wire.wireType !== field.wireType) {
        problem = `\`${item}\` is sent with wire type ${wire.wireType}, not ${field.wireType}`;
      } else if (wire.wireType === 0 && !field.wide && wire.end - wire.start > 5) {
        problem = `\`${name}\`, a number of at most 32 bits, is sent in more than 5 bytes`;
      } else if (field.most !== undefined && index === field.most) {
        problem =
          path === ''
            ? `more than ${field.most} ${field.name}; at most ${field.most} are accepted`
            : `\`${path.slice(0, -1)}\` has more than ${field.most} ${field.name}; at most ${field.most} are accepted`;
      } else if (field.fields !== undefined) {
        walk(wire.start, wire.end, field.fields, `${item}.`);
      }
      return problem === undefined;
    });
    if (!readable) throw new Error('the bytes are not protobuf the checks read as the decoder does');
  };
  walk(0, bytes.length, request, '');
  return problem;
}
