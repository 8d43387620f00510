import { readFile } from 'node:fs/promises';
import { SluiceError } from '@sluice/core';
import { parseRules, publishRules } from '@sluice/rules';
import { Cluster, Redis } from 'ioredis';
import type { PublishFlags } from './cli-args.js';

/** How long publishing waits for Redis before giving up. */
const CONNECT_TIMEOUT_MS = 5000;

/**
 * `sluice publish-rules`: checks the document (a mistake names the file, line and column and
 * changes nothing), stores it under the key and announces it, so every `sluice serve
 * --rules-key` of the fleet reloads it. Resolves to the version stored.
 */
export async function publishRulesFile(flags: PublishFlags): Promise<string> {
  const document = await readFile(flags.file, 'utf8');
  parseRules(document, { source: flags.file });
  const options = { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: CONNECT_TIMEOUT_MS };
  const client =
    'url' in flags.redis
      ? new Redis(flags.redis.url, { ...options, retryStrategy: () => null })
      : new Cluster(flags.redis.nodes, { lazyConnect: true, clusterRetryStrategy: () => null, redisOptions: options });
  const where = 'url' in flags.redis ? flags.redis.url : flags.redis.nodes.map((n) => `${n.host}:${n.port}`).join(',');
  let lastError: string | undefined;
  client.on('error', (error: Error) => {
    lastError = error.message;
  });
  try {
    await client.connect();
  } catch (cause) {
    client.disconnect();
    throw new SluiceError(
      'ERR_SLUICE_STORE_CONNECT',
      `[sluice] Cannot reach Redis at ${where}: ${lastError ?? (cause as Error).message}`,
      { cause },
    );
  }
  try {
    return await publishRules(client, flags.key, document);
  } finally {
    await client.quit().catch(() => client.disconnect());
  }
}
