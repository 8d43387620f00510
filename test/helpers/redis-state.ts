import type { Cluster, Redis } from 'ioredis';

/**
 * One policy's state as the Redis store keeps it in a client's state string
 * (` <policy id>=<n>,<n>[,<n>]` per policy), read the way an operator would, or undefined.
 */
export async function storedState(client: Redis | Cluster, clientKey: string, policyId: string) {
  const text = (await client.get(clientKey)) ?? '';
  const segment = text.split(' ').find((part) => part.startsWith(`${policyId}=`));
  return segment
    ?.slice(policyId.length + 1)
    .split(',')
    .map(Number);
}
