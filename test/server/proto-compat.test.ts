import { loadSync } from '@grpc/proto-loader';
import { PROTO_DIR } from '@sluice/server';
import { describe, expect, it } from 'vitest';
import { loadOfficialRls } from '../helpers/envoy-client.js';

interface Field {
  name: string;
  number: number;
  label: string;
  type: string;
  typeName: string;
}
interface Message {
  name: string;
  field: Field[];
  nestedType: Message[];
  enumType: { name: string; value: { name: string; number: number }[] }[];
}
type Definitions = Record<string, { type?: Message; format?: string } | Record<string, unknown>>;

const loaderOptions = { keepCase: true, enums: String, longs: Number };
const ours = loadSync('envoy/service/ratelimit/v3/rls.proto', {
  ...loaderOptions,
  includeDirs: [PROTO_DIR],
}) as Definitions;
const official = loadOfficialRls(loaderOptions) as Definitions;

/** Fields described by number, label, wire type and the referenced type's last name. */
function fieldsOf(message: Message): Map<number, string> {
  const fields = new Map<number, string>();
  for (const f of message.field) fields.set(f.number, `${f.name} ${f.label} ${f.type} ${f.typeName.split('.').pop()}`);
  return fields;
}

/** Every field and enum value of `upstream` appears in `copy` unchanged; returns what `copy` adds. */
function compare(copy: Message, upstream: Message, path: string, added: string[]): void {
  const mine = fieldsOf(copy);
  for (const [number, description] of fieldsOf(upstream)) {
    expect(mine.get(number), `${path} field ${number}`).toBe(description);
  }
  for (const [number, description] of mine) if (!fieldsOf(upstream).has(number)) added.push(`${path} ${description}`);
  for (const nested of upstream.nestedType) {
    const counterpart = copy.nestedType.find((n) => n.name === nested.name);
    if (nested.name.endsWith('Entry') && counterpart === undefined) continue;
    expect(counterpart, `${path}.${nested.name}`).toBeDefined();
    compare(counterpart as Message, nested, `${path}.${nested.name}`, added);
  }
  for (const upstreamEnum of upstream.enumType) {
    const counterpart = copy.enumType.find((e) => e.name === upstreamEnum.name);
    expect(counterpart, `${path}.${upstreamEnum.name}`).toBeDefined();
    for (const value of upstreamEnum.value) expect(counterpart?.value).toContainEqual(value);
    for (const value of counterpart?.value ?? [])
      if (!upstreamEnum.value.some((v) => v.name === value.name))
        added.push(`${path}.${upstreamEnum.name} ${value.name}`);
  }
}

const messageOf = (defs: Definitions, name: string): Message => (defs[name] as { type: Message }).type;

describe('our rls.proto against the official one (@grpc/grpc-js-xds)', () => {
  it('has every message field of the official rate-limit types, with the same numbers and types', () => {
    const added: string[] = [];
    for (const name of [
      'envoy.service.ratelimit.v3.RateLimitRequest',
      'envoy.service.ratelimit.v3.RateLimitResponse',
      'envoy.extensions.common.ratelimit.v3.RateLimitDescriptor',
      'envoy.config.core.v3.HeaderValue',
    ]) {
      compare(messageOf(ours, name), messageOf(official, name), name, added);
    }
    // Newer than the copy @grpc/grpc-js-xds ships: the descriptor's cost and the WEEK unit.
    expect(added.sort()).toEqual([
      'envoy.extensions.common.ratelimit.v3.RateLimitDescriptor hits_addend LABEL_OPTIONAL TYPE_MESSAGE UInt64Value',
      'envoy.service.ratelimit.v3.RateLimitResponse.RateLimit.Unit WEEK',
    ]);
  });

  it('has the official RateLimitUnit values and the same service and method', () => {
    const values = (defs: Definitions) =>
      (defs['envoy.type.v3.RateLimitUnit'] as { type: { value: unknown[] } }).type.value;
    expect(values(ours)).toEqual(values(official));
    const method = (defs: Definitions) =>
      (defs['envoy.service.ratelimit.v3.RateLimitService'] as Record<string, { path: string }>).ShouldRateLimit?.path;
    expect(method(ours)).toBe('/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit');
    expect(method(ours)).toBe(method(official));
  });

  // Golden bytes from research/turn2-features.md §0, encoded with the full upstream protos.
  const goldenRequest =
    '0a0465646765121f0a1d0a0e72656d6f74655f61646472657373120b3230332e302e3131332e3712140a0e0a047061746812062f6c6f67696e1a0208001802';
  const goldenResponse = '080212160802120c080a10021a067065722d697018002202082a12020801';
  type Method = {
    requestDeserialize(b: Buffer): unknown;
    requestSerialize(v: unknown): Buffer;
    responseSerialize(v: unknown): Buffer;
    responseDeserialize(b: Buffer): unknown;
  };
  const methodOf = (defs: Definitions) =>
    (defs['envoy.service.ratelimit.v3.RateLimitService'] as Record<string, Method>).ShouldRateLimit as Method;

  it('reads the golden request, the descriptor-level hits_addend of 0 included', () => {
    const request = methodOf(ours).requestDeserialize(Buffer.from(goldenRequest, 'hex'));
    expect(request).toEqual({
      domain: 'edge',
      descriptors: [
        { entries: [{ key: 'remote_address', value: '203.0.113.7' }] },
        { entries: [{ key: 'path', value: '/login' }], hits_addend: { value: 0 } },
      ],
      hits_addend: 2,
    });
    expect(methodOf(ours).requestSerialize(request).toString('hex')).toBe(goldenRequest);
  });

  it('writes the golden response byte for byte, and the official protos read it back', () => {
    const response = {
      overall_code: 'OVER_LIMIT',
      statuses: [
        {
          code: 'OVER_LIMIT',
          current_limit: { requests_per_unit: 10, unit: 'MINUTE', name: 'per-ip' },
          limit_remaining: 0,
          duration_until_reset: { seconds: 42 },
        },
        { code: 'OK' },
      ],
    };
    const bytes = methodOf(ours).responseSerialize(response);
    expect(bytes.toString('hex')).toBe(goldenResponse);
    expect(methodOf(official).responseDeserialize(bytes)).toMatchObject({
      overall_code: 'OVER_LIMIT',
      statuses: [
        { code: 'OVER_LIMIT', current_limit: { requests_per_unit: 10, unit: 'MINUTE', name: 'per-ip' } },
        { code: 'OK' },
      ],
    });
  });
});
