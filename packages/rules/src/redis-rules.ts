import { createHash } from 'node:crypto';
import { invalid, isTimerMs, MAX_TIMER_MS, SluiceError } from '@sluice/core';
import { RulesError, readProblem } from './errors.js';
import { checkName, checkSourceOptions } from './options.js';
import { parseRules } from './parse-rules.js';
import { createReloader, type ReloadOptions, type RulesText, type RulesWatcher } from './reloader.js';

/**
 * What the Redis rules source needs of a client: an ioredis `Redis` or `Cluster` fits. The
 * client stays the caller's; the source only closes the subscriber it duplicates from it.
 */
export interface RedisRulesClient {
  hgetall(key: string): Promise<Record<string, string>>;
  hget(key: string, field: string): Promise<string | null>;
  hset(key: string, ...fieldsAndValues: string[]): Promise<unknown>;
  publish(channel: string, message: string): Promise<unknown>;
  /** ioredis's `Redis#duplicate(options)`, or `Cluster#duplicate(startupNodes, options)` where `isCluster`. */
  duplicate(...override: never[]): RedisRulesSubscriber;
  readonly isCluster?: boolean;
}

export interface RedisRulesSubscriber {
  subscribe(channel: string): Promise<unknown>;
  on(event: 'message', listener: (channel: string, message: string) => void): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
  disconnect(): void;
}

export interface RedisRulesOptions extends ReloadOptions {
  client: RedisRulesClient;
  /** A hash holding `document` (the rules, YAML or JSON) and `version` (its digest). */
  key: string;
  /** Where a change is announced. @default `${key}:changed` */
  channel?: string | undefined;
  /**
   * Also compare the version this often (one `HGET`; the document is read only when the
   * version differs): pub/sub delivers at most once, so a message lost while a server
   * reconnects is caught here. Every server runs the new set within this bound (and usually
   * within one round trip of the publish). At most 2^31 - 1, Node's longest timer. @default 5000
   */
  pollIntervalMs?: number | undefined;
  /**
   * How long a read (the document, or a poll's version), or the subscription at start-up, may
   * wait for Redis's reply before it fails as `ERR_SLUICE_RULES_READ`: a client's own retries
   * would otherwise hold a reload for as long as they last (over a minute by ioredis's
   * defaults), and say nothing of the outage.
   * At most 2^31 - 1. @default 2000
   */
  readTimeoutMs?: number | undefined;
}

const channelOf = (options: { key: string; channel?: string | undefined }): string =>
  options.channel ?? `${options.key}:changed`;
const versionOf = (document: string): string => createHash('sha256').update(document).digest('base64url').slice(0, 16);

/**
 * Validates a rules document and stores it for every server of a fleet: one HSET of the
 * document and its version (so a reader never sees one without the other), then a PUBLISH.
 * A bad document throws its `RulesError` and changes nothing. Resolves to the version.
 */
export async function publishRules(
  client: RedisRulesClient,
  key: string,
  document: string,
  options: { channel?: string | undefined } = {},
): Promise<string> {
  if (typeof client?.hset !== 'function' || typeof client.publish !== 'function') {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_CLIENT',
      '[sluice] publishRules takes an ioredis Redis or Cluster first.',
    );
  }
  checkName(key, 'key');
  checkSourceOptions(options, 'publishRules', ['channel']);
  if (options.channel !== undefined) checkName(options.channel, 'channel');
  parseRules(document, { source: `redis:${key}` });
  const version = versionOf(document);
  try {
    await client.hset(key, 'document', document, 'version', version);
  } catch (error) {
    throw new SluiceError(
      'ERR_SLUICE_STORE_UNAVAILABLE',
      `[sluice] Cannot store the rules in the hash ${JSON.stringify(key)}: ${(error as Error).message}.`,
      { cause: error },
    );
  }
  try {
    await client.publish(channelOf({ key, ...options }), version);
  } catch (error) {
    throw new SluiceError(
      'ERR_SLUICE_STORE_UNAVAILABLE',
      `[sluice] The rules are stored as version ${version}, but announcing them failed: ${(error as Error).message}. Servers read them at their next poll.`,
      { cause: error },
    );
  }
  return version;
}

/** A reply, or a rejection once `timeoutMs` has passed without one. */
function within<T>(reply: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no reply within ${timeoutMs} ms`)), timeoutMs);
    timer.unref();
  });
  return Promise.race([reply, late]).finally(() => clearTimeout(timer));
}

async function readRules(
  client: RedisRulesClient,
  key: string,
  timeoutMs: number,
): Promise<RulesText & { version: string | undefined }> {
  const source = `redis:${key}`;
  let fields: Record<string, string>;
  try {
    fields = await within(client.hgetall(key), timeoutMs);
  } catch (error) {
    // A cause's message may end in its own full stop (ioredis's "…for details.").
    const message = `Cannot read the rules from Redis: ${(error as Error).message}.`.replace(/\.\.$/, '.');
    throw new RulesError([readProblem(source, message)], { cause: error });
  }
  const { document } = fields;
  if (document === undefined) {
    const message = `The hash ${JSON.stringify(key)} has no \`document\` field; store one with publishRules.`;
    throw new RulesError([readProblem(source, message)]);
  }
  return { text: document, version: fields.version, build: () => parseRules(document, { source }) };
}

/**
 * A connection of its own for the subscription, which queues its commands until it connects:
 * a client made with `enableOfflineQueue: false` (as a store's client may be) would otherwise
 * refuse the subscription sent while its duplicate is still connecting.
 */
function subscriberOf(client: RedisRulesClient): RedisRulesSubscriber {
  const duplicate = client.duplicate as (...override: unknown[]) => RedisRulesSubscriber;
  const queued = { enableOfflineQueue: true };
  return client.isCluster === true ? duplicate.call(client, [], queued) : duplicate.call(client, queued);
}

/**
 * The rules stored in Redis by `publishRules`, kept current: a reload on every message of
 * the channel and on a version change seen by polling. Rejects when the first document
 * cannot be read or is bad. A later bad document keeps the set in force and goes to `onError`.
 *
 * @example
 * const rules = await watchRedisRules({ client: redis, key: 'sluice:rules' });
 * app.use(rateLimit({ rules }));
 */
export async function watchRedisRules(options: RedisRulesOptions): Promise<RulesWatcher> {
  checkSourceOptions(options, 'watchRedisRules', [
    'client',
    'key',
    'channel',
    'pollIntervalMs',
    'readTimeoutMs',
    'onReload',
    'onError',
    'check',
  ]);
  const { client, key, pollIntervalMs = 5000, readTimeoutMs = 2000 } = options;
  if (typeof client?.hgetall !== 'function' || typeof client.duplicate !== 'function') {
    throw new SluiceError('ERR_SLUICE_INVALID_CLIENT', '[sluice] Option `client` must be an ioredis Redis or Cluster.');
  }
  checkName(key, 'key');
  if (options.channel !== undefined) checkName(options.channel, 'channel');
  // Node runs a timer of more than 2^31 - 1 ms after 1 ms: such a poll would ask Redis a
  // thousand times a second.
  for (const [name, ms] of [
    ['pollIntervalMs', pollIntervalMs],
    ['readTimeoutMs', readTimeoutMs],
  ] as const) {
    if (!isTimerMs(ms))
      invalid('ERR_SLUICE_INVALID_OPTION', name, ms, `a whole number of milliseconds from 1 to ${MAX_TIMER_MS}`);
  }
  // The version of the document last read: a poll compares it and reads the document only
  // when it differs, so a fleet polling a large document sends a digest, not the document.
  let version: string | undefined;
  const read = async () => {
    const rules = await readRules(client, key, readTimeoutMs);
    version = rules.version;
    return rules;
  };
  const reloader = createReloader(await read(), read, { ...options, debounceMs: 0, source: `redis:${key}` });
  const look = (): void => {
    within(client.hget(key, 'version'), readTimeoutMs).then((current) => {
      // Only a version read shows the document is back: a key deleted (or a hash without a
      // version, written by other means) answers null at every poll, and its failed read
      // would be reported anew at each.
      if (current !== null) reloader.readable();
      // A hash without a version is read whole each time.
      if (current === null || current !== version) reloader.schedule();
    }, reloader.schedule);
  };
  const subscriber = subscriberOf(client);
  // The subscriber reconnects on its own; meanwhile polling keeps the bound.
  subscriber.on('error', () => {});
  subscriber.on('message', (channel) => {
    if (channel === channelOf(options)) reloader.schedule();
  });
  const poll = setInterval(look, pollIntervalMs);
  poll.unref();
  reloader.onClose(() => {
    clearInterval(poll);
    subscriber.disconnect();
  });
  try {
    // Bounded as a read is: a subscriber that cannot connect (Redis at its client limit, or
    // gone since the first read) retries for ever, and start-up would wait with it.
    await within(subscriber.subscribe(channelOf(options)), readTimeoutMs);
  } catch (error) {
    await reloader.watcher.close();
    const message = `Cannot subscribe to ${JSON.stringify(channelOf(options))}: ${(error as Error).message}.`;
    throw new RulesError([readProblem(`redis:${key}`, message)], { cause: error });
  }
  // A publish between the first read and the subscription announced itself to nobody: the
  // version is compared once more now, not only at the first poll.
  look();
  return reloader.watcher;
}
