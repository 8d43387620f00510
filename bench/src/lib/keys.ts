/**
 * Client keys shaped like IPv4 addresses (what an adapter passes by default), in a fixed
 * shuffled order so that no store gains from keys arriving in insertion order. Each string
 * is copied into a flat one-byte string so that no later hashing flattens it and charges the
 * store under test for the copy.
 */
export function buildKeys(count: number): string[] {
  if (count === 1) return ['203.0.113.7'];
  const keys: string[] = new Array(count);
  for (let i = 0; i < count; i++) {
    const ip = `10.${(i >>> 16) & 255}.${(i >>> 8) & 255}.${i & 255}`;
    keys[i] = Buffer.from(ip, 'latin1').toString('latin1');
  }
  let seed = 0x2545f491;
  for (let i = count - 1; i > 0; i--) {
    seed = (seed * 1103515245 + 12345) >>> 0;
    const j = seed % (i + 1);
    const swap = keys[i] as string;
    keys[i] = keys[j] as string;
    keys[j] = swap;
  }
  return keys;
}
