import {
  createHeaderWriter,
  type HeaderTarget,
  type HeaderWriter,
  type Limiter,
  type ResolvedHeaders,
  type RuleVerdict,
  retryAfterFieldMs,
  sfSeconds,
  type WarnOnce,
} from '@sluice/core';

type Fields = { key: string; value: string }[];

/** Collects fields as `response_headers_to_add`; an appended List member joins the field's line. */
const collector: HeaderTarget<Fields> = {
  setHeader(fields, name, value) {
    const at = fields.findIndex((field) => field.key === name);
    if (at >= 0) fields.splice(at, 1);
    fields.push({ key: name, value });
  },
  appendHeader(fields, name, value) {
    const field = fields.find((f) => f.key === name);
    if (field === undefined) fields.push({ key: name, value });
    else field.value = `${field.value}, ${value}`;
  },
};

/**
 * The IETF RateLimit fields for one answer, written by core's own serialisers: one list item
 * per policy of every limited descriptor, and `Retry-After` when the request is refused.
 */
export function createHeaderFields(options: ResolvedHeaders, clock: () => number, warn: WarnOnce) {
  const writers = new WeakMap<Limiter, HeaderWriter>();
  const writerOf = (limiter: Limiter): HeaderWriter => {
    let writer = writers.get(limiter);
    if (writer === undefined) {
      writer = createHeaderWriter(limiter.policies, options, clock, warn);
      writers.set(limiter, writer);
    }
    return writer;
  };
  return function headerFields(verdicts: readonly RuleVerdict[], refused: boolean): Fields {
    const fields: Fields = [];
    const request = {};
    let waitMs = 0;
    // Every writer made before any writes: one made now may share a name with another, which
    // must then note its names on this call too (WRN_SLUICE_DUPLICATE_POLICY_NAME).
    const writersOf = verdicts.map(({ limiter }) => limiter && writerOf(limiter));
    verdicts.forEach(({ decision }, i) => {
      if (!decision.allowed) waitMs = Math.max(waitMs, retryAfterFieldMs(decision) ?? 0);
      // A blocked rule has no limiter and no policy to describe: only its wait counts.
      writersOf[i]?.write(decision, fields, collector, request);
    });
    if (refused && waitMs > 0) collector.setHeader(fields, 'Retry-After', sfSeconds(waitMs));
    return fields;
  };
}
