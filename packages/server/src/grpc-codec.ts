import { sluiceMetadata } from './sluice-metadata.js';
import type { DescriptorAnswer, RateLimitAnswer } from './wire-types.js';

type StructValue =
  | { nullValue: 'NULL_VALUE' }
  | { numberValue: number }
  | { stringValue: string }
  | { boolValue: boolean }
  | { listValue: { values: StructValue[] } }
  | { structValue: { fields: Record<string, StructValue> } };

/** A JSON value as `google.protobuf.Value`, the object form the gRPC loader encodes. */
export function toStructValue(value: unknown): StructValue {
  if (value === null || value === undefined) return { nullValue: 'NULL_VALUE' };
  if (typeof value === 'number') return { numberValue: value };
  if (typeof value === 'string') return { stringValue: value };
  if (typeof value === 'boolean') return { boolValue: value };
  if (Array.isArray(value)) return { listValue: { values: value.map(toStructValue) } };
  const fields: Record<string, StructValue> = {};
  for (const [key, item] of Object.entries(value)) fields[key] = toStructValue(item);
  return { structValue: { fields } };
}

/** `google.protobuf.Duration` from whole milliseconds. */
const toDuration = (ms: number) => ({ seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1_000_000 });

const toStatus = (status: DescriptorAnswer) => ({
  code: status.code,
  ...(status.currentLimit === undefined ? {} : { currentLimit: status.currentLimit }),
  limitRemaining: status.limitRemaining,
  durationUntilReset: toDuration(status.durationUntilResetMs),
});

/** The `RateLimitResponse` object for `@grpc/grpc-js` (loader options in proto.ts). */
export function toGrpcResponse(answer: RateLimitAnswer): object {
  const response: Record<string, unknown> = {
    overallCode: answer.overallCode,
    statuses: answer.statuses.map(toStatus),
    responseHeadersToAdd: answer.responseHeaders,
  };
  const metadata = sluiceMetadata(answer.statuses);
  if (metadata !== undefined) response.dynamicMetadata = { fields: { sluice: toStructValue(metadata) } };
  return response;
}
