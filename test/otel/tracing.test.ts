import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { createLimiter, type RateLimitStore } from '@sluice/core';
import { createMemoryStore } from '@sluice/memory';
import { enableTracing, LIMITED_EVENT } from '@sluice/otel';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const tracer = provider.getTracer('test');
const contextManager = new AsyncLocalStorageContextManager();
let disable: () => void;

beforeAll(() => {
  context.setGlobalContextManager(contextManager.enable());
  disable = enableTracing();
});
afterAll(async () => {
  disable();
  context.disable();
  await provider.shutdown();
});
afterEach(() => exporter.reset());

/** The memory store behind a promise and a turn of the event loop, as a remote store answers. */
const remote = (): RateLimitStore => {
  const inner = createMemoryStore();
  return {
    name: 'remote',
    consume: (request) => new Promise((resolve) => setImmediate(() => resolve(inner.consume(request)))),
    reset: inner.reset,
    refund: inner.refund,
  };
};

describe('enableTracing', () => {
  it('adds the decision to the active span, and an event when it refuses', async () => {
    const limiter = createLimiter({
      name: 'api',
      limit: 1,
      window: '1m',
      algorithm: 'fixed-window',
      prefix: 'web',
      clock: () => 0,
    });
    for (const name of ['first', 'second']) {
      await tracer.startActiveSpan(name, async (span) => {
        await limiter.consume('client');
        span.end();
      });
    }
    const [first, second, ...others] = exporter.getFinishedSpans();
    expect(others).toEqual([]); // sluice made no span of its own
    expect(first?.attributes).toEqual({
      'sluice.limiter': 'web',
      'sluice.policy': 'api',
      'sluice.result': 'allowed',
      'sluice.remaining': 0,
    });
    expect(first?.events).toEqual([]);
    expect(second?.attributes).toMatchObject({ 'sluice.result': 'limited' });
    expect(second?.events.map((e) => [e.name, e.attributes])).toEqual([
      [
        LIMITED_EVENT,
        {
          'sluice.limiter': 'web',
          'sluice.policy': 'api',
          'sluice.result': 'limited',
          'sluice.retry_after_ms': 60_000,
        },
      ],
    ]);
  });

  // Rules mode publishes each matched rule's decision, in the order of the rules: a rule that
  // passed after the one that refused made the 429's span read `allowed`.
  it('keeps the attributes of the refusal when a later limiter on the same span passes', async () => {
    const shared = { window: '1m', algorithm: 'fixed-window', clock: () => 0 } as const;
    const strict = createLimiter({ ...shared, name: 'strict', limit: 1, prefix: 'route' });
    const loose = createLimiter({ ...shared, name: 'loose', limit: 100, prefix: 'address' });
    for (const name of ['first', 'second']) {
      await tracer.startActiveSpan(name, async (span) => {
        await strict.consume('client');
        await loose.consume('client');
        span.end();
      });
    }
    const [first, second] = exporter.getFinishedSpans();
    expect(first?.attributes).toMatchObject({ 'sluice.limiter': 'address', 'sluice.result': 'allowed' });
    expect(second?.attributes).toEqual({
      'sluice.limiter': 'route',
      'sluice.policy': 'strict',
      'sluice.result': 'limited',
      'sluice.remaining': 0,
    });
    expect(second?.events.map((e) => e.attributes?.['sluice.limiter'])).toEqual(['route']);
  });

  it('finds the right span for decisions that wait on the store, interleaved', async () => {
    const limiter = createLimiter({ limit: 1, window: '1m', store: remote(), prefix: 'r' });
    await limiter.consume('taken');
    await Promise.all(
      ['taken', 'fresh', 'taken', 'fresh2'].map((key, i) =>
        tracer.startActiveSpan(`request-${i}-${key}`, async (span) => {
          await limiter.consume(key);
          span.end();
        }),
      ),
    );
    const results = Object.fromEntries(exporter.getFinishedSpans().map((s) => [s.name, s.attributes['sluice.result']]));
    expect(results).toEqual({
      'request-0-taken': 'limited',
      'request-1-fresh': 'allowed',
      'request-2-taken': 'limited',
      'request-3-fresh2': 'allowed',
    });
  });

  // A second enableTracing subscribed again: every refusal added its event to the span twice.
  it('refuses to be enabled twice until the first is disabled', async () => {
    expect(() => enableTracing()).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_OPTION', message: expect.stringMatching(/already on/) }),
    );
    disable();
    disable();
    disable = enableTracing();
    const limiter = createLimiter({ limit: 1, window: '1m', prefix: 'twice', clock: () => 0 });
    await tracer.startActiveSpan('twice', async (span) => {
      for (let i = 0; i < 2; i++) await limiter.consume('client');
      span.end();
    });
    expect(exporter.getFinishedSpans()[0]?.events.map((e) => e.name)).toEqual([LIMITED_EVENT]);
  });

  // Options were taken and ignored without a word: a `tracerProvider` given did nothing.
  it('refuses options, which it would ignore, when called, and stays off', async () => {
    disable();
    expect(() => enableTracing({ tracerProvider: provider } as never)).toThrow(
      expect.objectContaining({
        code: 'ERR_SLUICE_UNKNOWN_OPTION',
        message: expect.stringMatching(/Unknown enableTracing option `tracerProvider`: it takes none/),
      }),
    );
    expect(() => enableTracing({ tracerProvider: provider, sampler: 1 } as never)).toThrow(
      /Unknown enableTracing options `tracerProvider`, `sampler`: it takes none/,
    );
    for (const options of [null, [], 'x', 1, new Map([['tracerProvider', provider]])]) {
      expect(() => enableTracing(options as never)).toThrow(
        expect.objectContaining({
          code: 'ERR_SLUICE_INVALID_OPTION',
          message: expect.stringMatching(/`options` of enableTracing must be a plain object/),
        }),
      );
    }
    disable = enableTracing({});
    const limiter = createLimiter({ limit: 1, window: '1m', prefix: 'checked', clock: () => 0 });
    await tracer.startActiveSpan('checked', async (span) => {
      await limiter.consume('client');
      span.end();
    });
    expect(exporter.getFinishedSpans()[0]?.attributes).toMatchObject({ 'sluice.limiter': 'checked' });
  });

  it('does nothing without an active span, or with one that does not record', async () => {
    const limiter = createLimiter({ limit: 1, window: '1m' });
    await expect(limiter.consume('k')).resolves.toMatchObject({ allowed: true });
    const unsampled = trace.wrapSpanContext({ traceId: '1'.repeat(32), spanId: '1'.repeat(16), traceFlags: 0 });
    await context.with(trace.setSpan(context.active(), unsampled), () => limiter.consume('k'));
    expect(exporter.getFinishedSpans()).toEqual([]);
  });
});
