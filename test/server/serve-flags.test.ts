import { describe, expect, it } from 'vitest';
import { parsePublishArgs, parseServeArgs } from '../../packages/server/src/cli-args.js';

describe('a flag given twice', () => {
  // The last of two was kept: the service served other rules than the first flag named.
  it.each([
    ['--rules', ['--rules', 'a.yaml', '--rules', 'b.yaml']],
    ['--grpc-port', ['--rules', 'a.yaml', '--grpc-port', '7000', '--grpc-port=7001']],
    ['--failure-mode-deny', ['--rules', 'a.yaml', '--failure-mode-deny', '--failure-mode-deny']],
  ])('%s fails sluice serve at start-up', (flag, args) => {
    expect(() => parseServeArgs(args)).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_SERVER_OPTION', message: expect.stringContaining(flag) }),
    );
  });

  it('fails sluice publish-rules too', () => {
    const redis = ['--redis', 'redis://127.0.0.1:6379', '--redis', 'redis://127.0.0.1:6380'];
    const args = ['--rules', 'a.yaml', '--rules-key', 'rules', ...redis];
    expect(() => parsePublishArgs(args)).toThrow(expect.objectContaining({ code: 'ERR_SLUICE_INVALID_SERVER_OPTION' }));
  });
});

// ioredis reads a URL's query as client options: `?db=abc` became SELECT NaN (exit 1, blamed on
// reaching Redis), `?keyPrefix={x}` a client the store refused after connecting.
it.each(['redis://127.0.0.1:6379/?db=abc', 'redis://127.0.0.1:6379?keyPrefix=%7Bx%7D'])(
  'sluice serve refuses --redis %s at start-up',
  (url) => {
    expect(() => parseServeArgs(['--rules', 'a.yaml', '--redis', url])).toThrow(
      expect.objectContaining({
        code: 'ERR_SLUICE_INVALID_SERVER_OPTION',
        message: expect.stringContaining('--redis'),
      }),
    );
  },
);

describe('the connection timeouts', () => {
  it('default to 10 s for a request to arrive and 5 min for an idle gRPC connection', () => {
    expect(parseServeArgs(['--rules', 'a.yaml'])).toMatchObject({
      requestTimeoutMs: 10_000,
      grpcIdleTimeoutMs: 300_000,
    });
  });

  it('are read from their flags', () => {
    const args = ['--rules', 'a.yaml', '--request-timeout-ms', '2500', '--grpc-idle-timeout-ms', '60000'];
    expect(parseServeArgs(args)).toMatchObject({ requestTimeoutMs: 2_500, grpcIdleTimeoutMs: 60_000 });
  });

  it.each([
    ['--request-timeout-ms', '0'],
    ['--request-timeout-ms', '10s'],
    ['--grpc-idle-timeout-ms', '-1'],
  ])('refuse %s %s at start-up', (flag, value) => {
    expect(() => parseServeArgs(['--rules', 'a.yaml', flag, value])).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_SERVER_OPTION', message: expect.stringContaining(flag) }),
    );
  });

  // A slow store would reset the call (DEADLINE_EXCEEDED) where Envoy's failure mode expects
  // UNAVAILABLE; a call asks the store up to three times, one after another.
  it.each([[['--request-timeout-ms', '399']], [['--store-timeout-ms', '1000', '--request-timeout-ms', '3999']]])(
    'refuse a store timeout above a quarter of the request timeout: %j',
    (flags) => {
      expect(() => parseServeArgs(['--rules', 'a.yaml', ...flags])).toThrow(
        expect.objectContaining({
          code: 'ERR_SLUICE_INVALID_SERVER_OPTION',
          message: expect.stringMatching(
            /`--store-timeout-ms` must be at most a quarter of `--request-timeout-ms` \(\d+\)/,
          ),
        }),
      );
      expect(
        parseServeArgs(['--rules', 'a.yaml', '--store-timeout-ms', '25', '--request-timeout-ms', '100']),
      ).toMatchObject({ storeTimeoutMs: 25, requestTimeoutMs: 100 });
    },
  );
});
