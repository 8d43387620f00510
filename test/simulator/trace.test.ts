import { fileURLToPath } from 'node:url';
import { parseTrace, readTrace } from '@sluice/simulator';
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

  it('refuses a format it does not know, and reads a forced format', () => {
    expect(() => parseTrace('1 a', { format: 'csv' as 'plain' })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_TRACE', message: expect.stringContaining('format') }),
    );
    const line = '192.0.2.7 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.0" 200 1';
    expect(() => parseTrace(line, { format: 'plain' })).toThrow(expect.objectContaining({ line: 1 }));
  });

  it('reads the shipped sample access log', async () => {
    const traffic = await readTrace(sample);
    expect(traffic.length).toBeGreaterThan(1_000);
    expect(new Set(traffic.map((a) => a.key)).size).toBeGreaterThan(10);
  });
});
