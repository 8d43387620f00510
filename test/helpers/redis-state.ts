import type { Cluster, Redis } from 'ioredis';

/**
 * One policy's state as the Redis store keeps it in a client's state string
 * (` <slot>@<version>=<n>,<n>[,<n>];<used>,<resetAt>` per policy slot), read the way an
 * operator would, or undefined.
 */
export async function storedState(client: Redis | Cluster, clientKey: string, slot: string) {
  const text = (await client.get(clientKey)) ?? '';
  const segment = text.split(' ').find((part) => part.startsWith(`${slot}@`));
  return segment
    ?.slice(segment.indexOf('=') + 1, segment.indexOf(';'))
    .split(',')
    .map(Number);
}
