import { fileURLToPath } from 'node:url';
import { parseTrace, readTrace, type TraceOptions } from '@sluice/simulator';
import { describe, expect, it } from 'vitest';

const sample = fileURLToPath(new URL('../../packages/simulator/traces/sample-access.log', import.meta.url));

describe('parseTrace', () => {
  it('reads plain lines: epoch ms or ISO 8601, a key, an optional cost; skips blanks and comments', () => {
    const text = [
      '# time key cost',
      '1700000000250 alice 3',
      '',
      '2023-11-14T22:13:20.100Z\tbob',
      '1700000000100 carol',
    ].join('\n');
    expect(parseTrace(text)).toEqual([
      { at: 1_700_000_000_100, key: 'bob', cost: 1 },
      { at: 1_700_000_000_100, key: 'carol', cost: 1 },
      { at: 1_700_000_000_250, key: 'alice', cost: 3 },
    ]);
  });

  it('reads the Common and Combined Log Formats, keyed by client host, with the zone applied', () => {
    const text = [
      '192.0.2.7 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326',
      '2001:db8::1 - - [10/Oct/2000:20:55:37 +0000] "GET / HTTP/1.1" 429 - "https://example.com/" "curl/8.0 \\"x\\""',
    ].join('\n');
    expect(parseTrace(text)).toEqual([
      { at: Date.UTC(2000, 9, 10, 20, 55, 36), key: '192.0.2.7', cost: 1 },
      { at: Date.UTC(2000, 9, 10, 20, 55, 37), key: '2001:db8::1', cost: 1 },
    ]);
  });

  it.each([
    ['a time that is neither ms nor ISO 8601', '1700000000000 a\n10:00 b', 2],
    ['a zero cost', '1 a 1\n2 b 1\n3 c 0', 3],
    ['too many fields', '1 a 1 extra', 1],
    ['an ISO time without a zone', '2023-11-14T22:13:20 a', 1],
    [
      'an access-log line among plain ones',
      '1 a\n192.0.2.7 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.0" 200 1',
      2,
    ],
    ['31 February', '192.0.2.7 - - [31/Feb/2000:13:55:36 -0700] "GET / HTTP/1.0" 200 1', 1],
    ['a plain line in an access log', '192.0.2.7 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.0" 200 1\n5 a', 2],
  ])('rejects %s with ERR_SLUICE_INVALID_TRACE naming the line', (_, text, line) => {
    let caught: unknown;
    try {
      parseTrace(text, { source: 'my.log' });
    } catch (error) {
      caught = error;
    }
    expect(caught).toMatchObject({ code: 'ERR_SLUICE_INVALID_TRACE', line });
    expect((caught as Error).message).toContain(`my.log line ${line}:`);
  });

  it("reads nginx's default main format: combined with a quoted X-Forwarded-For after it", () => {
    const text = [
      '203.0.113.7 - - [24/Nov/2026:10:00:00 +0000] "GET / HTTP/1.1" 200 612 "-" "curl/8.5.0" "-"',
      '203.0.113.7 - - [24/Nov/2026:10:00:01 +0000] "GET /a HTTP/1.1" 200 612 "-" "curl/8.5.0" "198.51.100.9"',
    ].join('\n');
    expect(parseTrace(text)).toEqual([
      { at: Date.UTC(2026, 10, 24, 10, 0, 0), key: '203.0.113.7', cost: 1 },
      { at: Date.UTC(2026, 10, 24, 10, 0, 1), key: '203.0.113.7', cost: 1 },
    ]);
  });

  it('reports an access-log line it cannot read as an access-log problem, not as a bad plain line', () => {
    const line = '203.0.113.7 - - [24/Nov/2026:10:00:00 +0000] "GET / HTTP/1.1" 200';
    expect(() => parseTrace(line)).toThrow(expect.objectContaining({ message: expect.stringContaining('Log Format') }));
    expect(() => parseTrace(`1 a\n${line}`)).toThrow(
      expect.objectContaining({ line: 2, message: expect.stringContaining('an access-log line in a plain trace') }),
    );
  });

  it.each([
    ['30 February', '2026-02-30T12:00:00Z'],
    ['31 February at 24:00', '2026-02-31T24:00:00Z'],
    ['hour 24', '2026-03-01T24:00:00Z'],
    ['minute 60', '2026-03-01T10:60:00Z'],
    ['1969', '1969-12-31T23:59:59Z'],
    ['1970 local time before 1970 in UTC', '1970-01-01T00:30:00+01:00'],
    ['year 0050, which Date.UTC reads as 1950', '0050-06-01T00:00:00Z'],
  ])(
    'rejects an ISO time that is no real date (Date.parse rolled 30 February over) or is before 1970: %s, naming the line',
    (_, time) => {
      expect(() => parseTrace(`1 a\n${time} b`, { source: 'my.log' })).toThrow(
        expect.objectContaining({
          code: 'ERR_SLUICE_INVALID_TRACE',
          line: 2,
          message: expect.stringContaining('my.log line 2:'),
        }),
      );
    },
  );

  it('rejects a timestamp past 2^50 ms, the latest time a limiter takes, naming the line', () => {
    expect(() => parseTrace('1 a\n9007199254740991 b', { source: 'my.log' })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_TRACE', line: 2, message: expect.stringContaining('2^50') }),
    );
  });

  it('rejects an access-log time before 1970, naming the line', () => {
    const line = '192.0.2.7 - - [31/Dec/1969:23:59:59 +0000] "GET / HTTP/1.0" 200 1';
    expect(() => parseTrace(line)).toThrow(expect.objectContaining({ code: 'ERR_SLUICE_INVALID_TRACE', line: 1 }));
  });

  it('reads real ISO dates with zones and fractions exactly', () => {
    expect(parseTrace('2024-02-29T23:59:59.5+01:00 a\n1970-01-01T01:00:00.007+01:00 b')).toEqual([
      { at: 7, key: 'b', cost: 1 },
      { at: Date.UTC(2024, 1, 29, 22, 59, 59, 500), key: 'a', cost: 1 },
    ]);
  });

  it('reads ISO fractions finer than a millisecond, truncated to the millisecond (they were refused)', () => {
    const second = Date.UTC(2026, 0, 1);
    expect(parseTrace('2026-01-01T00:00:00.123456Z a\n2026-01-01T00:00:00.999999999+00:00 b')).toEqual([
      { at: second + 123, key: 'a', cost: 1 },
      { at: second + 999, key: 'b', cost: 1 },
    ]);
    expect(parseTrace('2016-12-31T23:59:60.0005Z a')).toEqual([{ at: Date.UTC(2017, 0, 1), key: 'a', cost: 1 }]);
  });

  it('reads access-log years 0070 to 0099 as written, not as 1970 to 1999', () => {
    const log = (year: string) => `192.0.2.7 - - [01/Jan/${year}:00:00:00 +0000] "GET / HTTP/1.1" 200 1`;
    for (const year of ['0070', '0099']) {
      expect(() => parseTrace(log(year)), year).toThrow(
        expect.objectContaining({ code: 'ERR_SLUICE_INVALID_TRACE', message: expect.stringContaining('before 1970') }),
      );
    }
    expect(parseTrace(log('1999'))).toEqual([{ at: Date.UTC(1999, 0, 1), key: '192.0.2.7', cost: 1 }]);
  });

  it('reads a leap second alike in ISO 8601 and access-log times, and only at the end of a UTC day', () => {
    // The ISO time was refused and the access-log one taken anywhere, rolled into the next minute.
    const midnight = Date.UTC(2017, 0, 1);
    const log = (time: string) => `192.0.2.7 - - [${time}] "GET / HTTP/1.1" 200 1`;
    expect(parseTrace('2016-12-31T23:59:60Z a')).toEqual([{ at: midnight, key: 'a', cost: 1 }]);
    expect(parseTrace('2017-01-01T00:59:60.250+01:00 a')).toEqual([{ at: midnight + 250, key: 'a', cost: 1 }]);
    expect(parseTrace(log('31/Dec/2016:23:59:60 +0000'))).toEqual([{ at: midnight, key: '192.0.2.7', cost: 1 }]);
    expect(parseTrace(log('31/Dec/2016:18:59:60 -0500'))).toEqual([{ at: midnight, key: '192.0.2.7', cost: 1 }]);
    // The epoch's own first second, refused as the second before it.
    expect(parseTrace('1969-12-31T23:59:60Z a')).toEqual([{ at: 0, key: 'a', cost: 1 }]);
    expect(parseTrace(log('31/Dec/1969:23:59:60 +0000'))).toEqual([{ at: 0, key: '192.0.2.7', cost: 1 }]);
    expect(() => parseTrace('1969-12-31T23:59:59Z a')).toThrow(/before 1970-01-01/);
    const notAtDayEnd = expect.objectContaining({
      code: 'ERR_SLUICE_INVALID_TRACE',
      message: expect.stringContaining('leap second'),
    });
    for (const line of [
      '2016-12-31T12:30:60Z a',
      '2016-12-31T23:59:60+01:00 a',
      log('10/Oct/2000:13:55:60 -0700'),
      log('31/Dec/2016:23:59:60 +0100'),
    ]) {
      expect(() => parseTrace(line), line).toThrow(notAtDayEnd);
    }
  });

  it('throws ERR_SLUICE_INVALID_TRACE, not a TypeError, when given something other than text', () => {
    expect(() => parseTrace(123 as unknown as string)).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_TRACE', message: expect.stringContaining('received 123') }),
    );
  });

  it('refuses a format it does not know, and reads a forced format', () => {
    expect(() => parseTrace('1 a', { format: 'csv' as 'plain' })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_TRACE', message: expect.stringContaining('format') }),
    );
    const line = '192.0.2.7 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.0" 200 1';
    expect(() => parseTrace(line, { format: 'plain' })).toThrow(expect.objectContaining({ line: 1 }));
  });

  it('refuses options it does not know, and options that are not an object (a misspelling was dropped, null a TypeError)', async () => {
    const refused = (text: string) =>
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_TRACE', message: expect.stringContaining(text) });
    const misspelt = { formt: 'plain' } as TraceOptions;
    expect(() => parseTrace('1000 a', misspelt)).toThrow(
      refused('Unknown trace option `formt` (did you mean `format`?)'),
    );
    await expect(readTrace(sample, misspelt)).rejects.toThrow(refused('`formt`'));
    // readTrace names the trace by its path itself: a `source` given to it was overwritten unseen.
    await expect(readTrace(sample, { source: 'x' } as TraceOptions)).rejects.toThrow(refused('`source`'));
    for (const options of [null, 'plain', ['plain']]) {
      expect(() => parseTrace('1000 a', options as TraceOptions)).toThrow(refused('Trace options must be an object'));
      await expect(readTrace(sample, options as TraceOptions)).rejects.toThrow(
        refused('Trace options must be an object'),
      );
    }
    expect(() => parseTrace('1000 a', { source: null as never })).toThrow(refused('`source`'));
    expect(parseTrace('1000 a', { format: 'plain', source: 'x.log' })).toEqual([{ at: 1000, key: 'a', cost: 1 }]);
  });

  it('refuses a cost too large to read exactly, naming the line (9999999999999999 was read as 10^16)', () => {
    expect(parseTrace('1000 a 9007199254740991')).toEqual([{ at: 1000, key: 'a', cost: Number.MAX_SAFE_INTEGER }]);
    for (const cost of ['9007199254740992', '9999999999999999']) {
      expect(() => parseTrace(`1000 a 1\n2000 a ${cost}`)).toThrow(
        expect.objectContaining({ code: 'ERR_SLUICE_INVALID_TRACE', line: 2, message: expect.stringContaining(cost) }),
      );
    }
  });

  it('reads the shipped sample access log', async () => {
    const traffic = await readTrace(sample);
    expect(traffic.length).toBeGreaterThan(1_000);
    expect(new Set(traffic.map((a) => a.key)).size).toBeGreaterThan(10);
  });
});
