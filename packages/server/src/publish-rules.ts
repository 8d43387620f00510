import { readFile } from 'node:fs/promises';
import { parseRules, publishRules } from '@sluice/rules';
import type { PublishFlags } from './cli-args.js';
import { openRedis, quitRedis } from './redis-connection.js';

/**
 * `sluice publish-rules`: checks the document (a mistake names the file, line and column and
 * changes nothing), stores it under the key and announces it, so every `sluice serve
 * --rules-key` of the fleet reloads it. Resolves to the version stored.
 */
export async function publishRulesFile(flags: PublishFlags): Promise<string> {
  const document = await readFile(flags.file, 'utf8');
  parseRules(document, { source: flags.file });
  const client = await openRedis(flags.redis);
  try {
    return await publishRules(client, flags.key, document);
  } finally {
    await quitRedis(client);
  }
}
