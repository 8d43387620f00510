import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { trace } from '@opentelemetry/api';
import { type DecisionEvent, SLUICE_CHANNELS, SluiceError } from '@sluice/core';
import { ATTRIBUTES } from './names.js';
import { checkOptions } from './options.js';

/** The span event added when a request is refused. */
export const LIMITED_EVENT = 'sluice.limited';

/** Whether tracing is on: spans come from the active context, so a second subscriber would add each event twice. */
let tracing = false;

/**
 * Adds each decision to the OpenTelemetry span active around `consume` (the HTTP server span
 * of an instrumented app, say): `sluice.limiter`, `sluice.policy`, `sluice.result` and
 * `sluice.remaining` as attributes, and an event `sluice.limited` with the wait when the
 * request is refused. It creates no span of its own; with no span active, or one not
 * recording, it does nothing. A request that meets several limiters (or rules) keeps the
 * attributes of the last one that refused it, else of the last one, and an event per refusal:
 * a 429's span always says why. Returns `disable()`. It is on once per process: a
 * second `enableTracing` before the first one's `disable()` throws `ERR_SLUICE_INVALID_OPTION`.
 * It takes no options: one given (a `tracerProvider`, say) throws `ERR_SLUICE_UNKNOWN_OPTION`
 * rather than be ignored.
 */
export function enableTracing(options: Readonly<Record<string, never>> = {}): () => void {
  checkOptions(options, 'enableTracing');
  if (tracing) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      '[sluice] enableTracing is already on: a second would add every decision to the active span twice; call the disable() it returned first.',
    );
  }
  tracing = true;
  // Spans a refusal has marked: a decision that passes after it (another rule's, published
  // later) must not make a 429's span read as allowed.
  const refused = new WeakSet<object>();
  const onDecision = (message: unknown): void => {
    const span = trace.getActiveSpan();
    if (span === undefined || !span.isRecording()) return;
    const { limiter, policy, result, decision } = message as DecisionEvent;
    if (!decision.allowed) refused.add(span);
    else if (refused.has(span)) return;
    span.setAttributes({
      [ATTRIBUTES.limiter]: limiter,
      [ATTRIBUTES.policy]: policy,
      [ATTRIBUTES.result]: result,
      'sluice.remaining': decision.remaining,
    });
    if (!decision.allowed) {
      span.addEvent(LIMITED_EVENT, {
        [ATTRIBUTES.limiter]: limiter,
        [ATTRIBUTES.policy]: policy,
        [ATTRIBUTES.result]: result,
        // Infinity (a cost that can never pass) is no attribute value: it is left out.
        ...(Number.isFinite(decision.retryAfterMs) ? { 'sluice.retry_after_ms': decision.retryAfterMs } : {}),
      });
    }
  };
  subscribe(SLUICE_CHANNELS.decision, onDecision);
  let enabled = true;
  return function disable() {
    if (!enabled) return;
    enabled = false;
    tracing = false;
    unsubscribe(SLUICE_CHANNELS.decision, onDecision);
  };
}
