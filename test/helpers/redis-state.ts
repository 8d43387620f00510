import type { Cluster, Redis } from 'ioredis';

/** One policy slot's state in a client's state string, as the Redis store keeps it. */
export interface StoredRecord {
  readonly slot: string;
  readonly version: string;
  /** The state's own numbers: three (a state of two has 0 for the third). */
  readonly numbers: readonly number[];
  readonly used: number;
  readonly resetAt: number;
}

const NUMBERS = 5;
const BYTES = 8 * NUMBERS;

/**
 * A client's state string read the way an operator would (the layout the scripts' header
 * describes): byte 1, ' <slot>@<version>=' per slot, byte 0, then five little-endian doubles
 * per slot in that order. Throws on anything else, so a test never reads a broken string as
 * no state.
 */
export function decodeStates(raw: Buffer): StoredRecord[] {
  const end = raw.indexOf(0);
  if (raw[0] !== 1 || end < 0) throw new Error(`not a state string: ${raw.toString('hex')}`);
  const heads = [
    ...raw
      .subarray(1, end)
      .toString()
      .matchAll(/ ([^@ ]+)@([^= ]+)=/g),
  ];
  if (raw.length !== end + 1 + BYTES * heads.length) throw new Error(`state string of a wrong length: ${raw.length}`);
  return heads.map(([, slot, version], k) => {
    const at = end + 1 + BYTES * k;
    const number = (i: number) => raw.readDoubleLE(at + 8 * i);
    return {
      slot: slot as string,
      version: version as string,
      numbers: [number(0), number(1), number(2)],
      used: number(3),
      resetAt: number(4),
    };
  });
}

/** The string of `records` in that order, as a script writes it. */
export function encodeStates(records: readonly StoredRecord[]): Buffer {
  const heads = records.map((r) => ` ${r.slot}@${r.version}=`).join('');
  const numbers = Buffer.alloc(BYTES * records.length);
  for (const [k, r] of records.entries()) {
    for (const [i, n] of [...r.numbers, r.used, r.resetAt].entries()) numbers.writeDoubleLE(n, BYTES * k + 8 * i);
  }
  return Buffer.concat([Buffer.from([1]), Buffer.from(heads), Buffer.from([0]), numbers]);
}

/** Every slot's state a client's key holds, in the string's order; none for no key. */
export async function storedStates(client: Redis | Cluster, clientKey: string): Promise<StoredRecord[]> {
  const raw = await client.getBuffer(clientKey);
  return raw === null ? [] : decodeStates(raw);
}

/** One policy slot's own numbers in a client's state string, or undefined. */
export async function storedState(client: Redis | Cluster, clientKey: string, slot: string) {
  return (await storedStates(client, clientKey)).find((r) => r.slot === slot)?.numbers;
}
