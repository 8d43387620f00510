import { isUtf8 } from 'node:buffer';
import { readFile } from 'node:fs/promises';
import { SluiceError } from '@sluice/core';
import { createRedisStore } from '@sluice/redis';
import { parseRules, publishRules } from '@sluice/rules';
import type { PublishFlags } from './cli-args.js';
import { openRedis, quitRedis } from './redis-connection.js';
import { checkRuleLimiters, createServiceLimiters } from './rule-limiters.js';

/**
 * `sluice publish-rules`: checks the document (a mistake names the file, line and column and
 * changes nothing), stores it under the key and announces it, so every `sluice serve
 * --rules-key` of the fleet reloads it. Resolves to the version stored.
 */
export async function publishRulesFile(flags: PublishFlags): Promise<string> {
  const document = await readDocument(flags.file);
  const rules = parseRules(document, { source: flags.file });
  const client = await openRedis(flags.redis);
  try {
    // Checked as every `sluice serve --rules-key` loads it, on the Redis store (at most 16
    // policies a rule): a set only the parser had checked was stored, refused by every replica
    // reloading it, and stopped every replica that started until the next publish.
    const store = createRedisStore({ client, denyCache: false });
    checkRuleLimiters(
      rules,
      createServiceLimiters({ store, storeTimeoutMs: 1_000, clock: undefined, logger: console }),
    );
    return await publishRules(client, flags.key, document);
  } finally {
    await quitRedis(client);
  }
}

/** The one document `--rules` names: a directory is several, which one key cannot hold. */
async function readDocument(file: string): Promise<string> {
  let bytes: Buffer;
  try {
    bytes = await readFile(file);
  } catch (error) {
    const why =
      (error as NodeJS.ErrnoException).code === 'EISDIR'
        ? 'it is a directory; publish-rules stores one document, so name one file'
        : (error as Error).message;
    throw new SluiceError('ERR_SLUICE_RULES_READ', `[sluice] Cannot read --rules ${file}: ${why}.`, { cause: error });
  }
  // As loadRules refuses it: stored with its bad bytes as U+FFFD, a rule would match no request.
  if (!isUtf8(bytes))
    throw new SluiceError('ERR_SLUICE_RULES_READ', `[sluice] Cannot read --rules ${file}: it is not UTF-8 text.`);
  return bytes.toString('utf8');
}
