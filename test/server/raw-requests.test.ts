import {
  type Client,
  credentials,
  makeGenericClientConstructor,
  type ServiceDefinition,
  type ServiceError,
  status,
} from '@grpc/grpc-js';
import { parseRules } from '@sluice/rules';
import { createDecisionServer, type DecisionServer } from '@sluice/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../helpers/clock.js';
import { loadOfficialRls, type OfficialResponse } from '../helpers/envoy-client.js';

const rules = parseRules(`
domain: d
descriptors:
  - key: k
    rate_limit: { unit: hour, requests_per_unit: 3 }
`);
const log = { line() {}, warn() {} };
let server: DecisionServer;
let base: string;
/** A `RateLimitService` client that sends the bytes it is given. */
type RawClient = Client & {
  ShouldRateLimit(bytes: Buffer, done: (error: ServiceError | null, response?: OfficialResponse) => void): void;
};
let raw: RawClient;

/** Bytes that are no UTF-8: a lone byte above 0x7f, a lead byte with no follower, a cut 4-byte sequence. */
const invalid = [[0xff], [0xfe], [0xc3, 0x28], [0xf0, 0x90, 0x80]].map((bytes) => Buffer.from(bytes));
/** U+FFFD itself, which the invalid bytes were read as. */
const replacement = Buffer.from('\ufffd');

beforeAll(async () => {
  server = createDecisionServer({ rules, clock: manualClock(), grpcPort: 0, httpPort: 0, host: '127.0.0.1', log });
  const { grpcPort, httpPort } = await server.listen();
  base = `http://127.0.0.1:${httpPort}`;
  // Envoy's own protos read the answers; the requests go as the test wrote them, byte for byte.
  const official = loadOfficialRls()['envoy.service.ratelimit.v3.RateLimitService'];
  const { ShouldRateLimit } = official as unknown as ServiceDefinition<{ ShouldRateLimit: unknown }>;
  const method = { ...ShouldRateLimit, requestSerialize: (bytes: Buffer) => bytes };
  const Raw = makeGenericClientConstructor({ ShouldRateLimit: method }, 'RateLimitService');
  raw = new Raw(`127.0.0.1:${grpcPort}`, credentials.createInsecure()) as unknown as RawClient;
});
afterAll(async () => {
  raw?.close();
  await server?.close();
});

const callCount = async (transport: string, result: string): Promise<number> => {
  const text = await (await fetch(`${base}/metrics`)).text();
  const prefix = `sluice_service_calls_total{transport="${transport}",result="${result}"} `;
  const line = text.split('\n').find((l) => l.startsWith(prefix));
  return line === undefined ? 0 : Number(line.slice(prefix.length));
};

describe('POST /json', () => {
  const postJson = (value: Buffer) =>
    fetch(`${base}/json`, {
      method: 'POST',
      body: Buffer.concat([
        Buffer.from('{"domain":"d","descriptors":[{"entries":[{"key":"k","value":"json-'),
        value,
        Buffer.from('"}]}]}'),
      ]),
    });

  it('refuses a body that is not UTF-8, counting nothing (read as U+FFFD, \\xff, \\xfe and U+FFFD shared one count)', async () => {
    for (const bytes of invalid) {
      const response = await postJson(bytes);
      expect(response.status).toBe(400);
      expect(await response.json()).toEqual({
        code: 'INVALID',
        message: '[sluice] Invalid RateLimitRequest: the body is not UTF-8.',
      });
    }
    const answer = (await (await postJson(replacement)).json()) as { statuses: { limitRemaining: number }[] };
    expect(answer.statuses[0]?.limitRemaining).toBe(2);
    expect(await callCount('http', 'invalid')).toBe(invalid.length);
  });
});

/** Protobuf's wire format by hand: only a hand-made message can carry a string that is not UTF-8. */
const varint = (n: number): number[] => (n < 0x80 ? [n] : [(n & 0x7f) | 0x80, ...varint(n >>> 7)]);
const field = (number: number, payload: Buffer): Buffer =>
  Buffer.concat([Buffer.from([...varint(number * 8 + 2), ...varint(payload.length)]), payload]);
const text = (value: string) => Buffer.from(value);
/** A `RateLimitRequest` of one descriptor of one entry, with `extra` fields after it. */
const request = (domain: Buffer, key: Buffer, value: Buffer, ...extra: Buffer[]): Buffer =>
  Buffer.concat([field(1, domain), field(2, field(1, Buffer.concat([field(1, key), field(2, value)]))), ...extra]);

const ask = (bytes: Buffer) =>
  new Promise<OfficialResponse | { code: status; details: string }>((resolve) =>
    raw.ShouldRateLimit(bytes, (error, response) =>
      resolve(error ? { code: error.code, details: error.details } : (response as OfficialResponse)),
    ),
  );

describe('ShouldRateLimit over gRPC', () => {
  it('refuses a domain, key or value that is not UTF-8 with INVALID_ARGUMENT (read as U+FFFD, they shared one count)', async () => {
    for (const bytes of invalid) {
      expect(await ask(request(text('d'), text('k'), Buffer.concat([text('grpc-'), bytes])))).toEqual({
        code: status.INVALID_ARGUMENT,
        details: '[sluice] Invalid RateLimitRequest: `descriptors[0].entries[0].value` is not UTF-8.',
      });
    }
    expect(await ask(request(Buffer.from([0xff]), text('k'), text('v')))).toMatchObject({
      code: status.INVALID_ARGUMENT,
      details: expect.stringContaining('`domain` is not UTF-8'),
    });
    const entry = (key: Buffer) => field(1, Buffer.concat([field(1, key), field(2, text('v'))]));
    const twoDescriptors = Buffer.concat([
      field(1, text('d')),
      field(2, entry(text('k'))),
      field(2, Buffer.concat([entry(text('k')), entry(Buffer.from([0xfe]))])),
    ]);
    expect(await ask(twoDescriptors)).toMatchObject({
      code: status.INVALID_ARGUMENT,
      details: expect.stringContaining('`descriptors[1].entries[1].key` is not UTF-8'),
    });
    const answer = await ask(request(text('d'), text('k'), Buffer.concat([text('grpc-'), replacement])));
    expect((answer as OfficialResponse).statuses?.[0]?.limit_remaining).toBe(2);
    expect(await callCount('grpc', 'invalid')).toBe(invalid.length + 2);
  });

  it('looks at no other field: bytes in a field it does not know, and numbers, are no strings', async () => {
    // `hits_addend: 200` is the varint C8 01; field 15 is none of RateLimitRequest's. The call is
    // decided (200 is over the limit of 3), not refused.
    const hitsAddend = Buffer.from([3 * 8, ...varint(200)]);
    const answer = await ask(request(text('d'), text('k'), text('other'), hitsAddend, field(15, Buffer.from([0xff]))));
    expect(answer).toMatchObject({ overall_code: 'OVER_LIMIT' });
  });
});

describe('ShouldRateLimit with more descriptors or entries than a call may hold', () => {
  it('refuses them from the bytes, before decoding (2,000,000 empty descriptors held the event loop 2.4 s)', async () => {
    // An empty descriptor is 0x12 0x00: field 2, length 0. Half a million fill a request to
    // just under its bound of 1 MiB.
    const manyDescriptors = Buffer.concat([field(1, text('d')), Buffer.alloc(1_000_000, Buffer.from([0x12, 0x00]))]);
    expect(await ask(manyDescriptors)).toMatchObject({
      code: status.INVALID_ARGUMENT,
      // Counted as decoded, the message said "500000 descriptors".
      details: '[sluice] Invalid RateLimitRequest: more than 64 descriptors; at most 64 are accepted.',
    });
    const entry = field(1, Buffer.concat([field(1, text('k')), field(2, text('v'))]));
    const manyEntries = Buffer.concat([field(1, text('d')), field(2, Buffer.concat(Array(1_000).fill(entry)))]);
    expect(await ask(manyEntries)).toMatchObject({
      code: status.INVALID_ARGUMENT,
      details: expect.stringContaining('`descriptors[0]` has more than 16 entries'),
    });
    // Within the bounds, a call is decided.
    const answer = await ask(request(text('d'), text('k'), text('counted')));
    expect((answer as OfficialResponse).statuses?.[0]?.limit_remaining).toBe(2);
  });
});

/** A field of wire type 0 (a varint): how a number goes, and how a hand-made message may send any field. */
const number = (fieldNumber: number, value: number): Buffer =>
  Buffer.from([...varint(fieldNumber * 8), ...varint(value)]);

// The decoder reads each field it knows as its type, whatever the wire says; the checks that
// read the bytes read them as the wire says. A value sent as a number passed the UTF-8 check,
// and descriptors sent so escaped the count.
describe('ShouldRateLimit with a field it knows sent with another wire type', () => {
  it('refuses it before decoding, wherever it stands, and counts nothing', async () => {
    const entry = (...fields: Buffer[]) => field(1, Buffer.concat(fields));
    const descriptor = (...fields: Buffer[]) => field(2, Buffer.concat(fields));
    const domain = field(1, text('d'));
    const key = field(1, text('k'));
    const cases: [Buffer, string][] = [
      // Field 2 (value) as the varint 0xff 0xfe 0x01: bytes that are no UTF-8, sent as a number.
      [
        Buffer.concat([domain, descriptor(entry(key, Buffer.from([0x10, 0xff, 0xfe, 0x01])))]),
        'descriptors[0].entries[0].value',
      ],
      [Buffer.concat([number(1, 5), descriptor(entry(key, field(2, text('v'))))]), 'domain'],
      [Buffer.concat([domain, number(2, 0)]), 'descriptors[0]'],
      [Buffer.concat([domain, descriptor(number(1, 0))]), 'descriptors[0].entries[0]'],
      [
        Buffer.concat([domain, descriptor(entry(key, field(2, text('v'))), field(2, field(2, text('HOUR'))))]),
        'descriptors[0].limit.unit',
      ],
      [
        Buffer.concat([domain, descriptor(entry(key, field(2, text('v'))), field(3, field(1, text('7'))))]),
        'descriptors[0].hits_addend.value',
      ],
      [Buffer.concat([domain, descriptor(entry(key, field(2, text('v')))), field(3, text('2'))]), 'hits_addend'],
      // A group (wire type 3) under the number of `descriptors`.
      [Buffer.concat([domain, Buffer.from([2 * 8 + 3, 2 * 8 + 4])]), 'descriptors[0]'],
    ];
    const before = await callCount('grpc', 'invalid');
    for (const [bytes, path] of cases) {
      expect([path, await ask(bytes)]).toEqual([
        path,
        { code: status.INVALID_ARGUMENT, details: expect.stringContaining(`\`${path}\` is sent with wire type`) },
      ]);
    }
    expect(await callCount('grpc', 'invalid')).toBe(before + cases.length);
    // Fields it does not know, and groups it does not know holding numbers it does, are skipped.
    const unknown = Buffer.concat([number(15, 1), Buffer.from([15 * 8 + 3, 2 * 8, 0, 15 * 8 + 4])]);
    const answer = await ask(request(text('d'), text('k'), text('wire-types'), unknown));
    expect((answer as OfficialResponse).statuses?.[0]?.limit_remaining).toBe(2);
  });

  it('refuses half a million descriptors sent as numbers at the first, before decoding', async () => {
    const asNumbers = Buffer.concat([field(1, text('d')), Buffer.alloc(1_000_000, Buffer.from([0x10, 0x00]))]);
    expect(await ask(asNumbers)).toEqual({
      code: status.INVALID_ARGUMENT,
      details: '[sluice] Invalid RateLimitRequest: `descriptors[0]` is sent with wire type 0, not 2.',
    });
  });
});

// The walk before decoding read tags and lengths of any size, and the decoder keeps a uint32's
// low 32 bits: a tag past 2^32 hid a descriptor from the count, and a length past the request's
// end had the walk step through bytes that are not there (a 9-byte request, for minutes).
describe('ShouldRateLimit with bytes the checks cannot read as the decoder does', () => {
  it('refuses them at once, as any message the decoder refuses, counting nothing', async () => {
    const before = await callCount('grpc', 'invalid');
    const domain = field(1, text('d'));
    const refused = [
      // A descriptor 2^32 − 1 bytes long, in a request of 9 bytes.
      Buffer.concat([domain, Buffer.from([0x12, 0xff, 0xff, 0xff, 0xff, 0x0f])]),
      // Descriptors under a tag the decoder reads as field 2 (bit 32 set, dropped by it).
      Buffer.concat([domain, ...Array(100).fill(Buffer.from([0x92, 0x80, 0x80, 0x80, 0x10, 0x00]))]),
      // An entry whose length runs past its descriptor's end, into the request's next bytes.
      Buffer.concat([domain, field(2, Buffer.from([0x0a, 0x05])), field(15, text('abcde'))]),
      // A group that never ends.
      Buffer.concat([domain, Buffer.from([15 * 8 + 3])]),
    ];
    for (const bytes of refused) {
      expect(await ask(bytes)).toMatchObject({ code: status.INTERNAL, details: expect.stringContaining('deserializ') });
    }
    // A uint32 the decoder would read in 5 bytes and skip 5 more of: refused as a bad request.
    const longHitsAddend = Buffer.from([3 * 8, 0x81, 0x80, 0x80, 0x80, 0x80, 0x00]);
    expect(await ask(request(text('d'), text('k'), text('long'), longHitsAddend))).toEqual({
      code: status.INVALID_ARGUMENT,
      details:
        '[sluice] Invalid RateLimitRequest: `hits_addend`, a number of at most 32 bits, is sent in more than 5 bytes.',
    });
    expect(await callCount('grpc', 'invalid')).toBe(before + 1);
  });
});
