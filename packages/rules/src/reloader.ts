import { messageOf, publishRulesReload } from '@sluice/core';
import { isRulesError, RulesError } from './errors.js';
import type { RuleSet } from './types.js';

/**
 * Rules as read, built only on demand: a reload compares the text first, so a touch, or a bad
 * document re-read by a poll, costs no parse.
 */
export interface RulesText {
  readonly text: string;
  /** The rule set of `text`; throws its `RulesError`. */
  build(): RuleSet;
}

export interface ReloadOptions {
  /** Called with the new set after each swap. */
  onReload?: ((rules: RuleSet) => void) | undefined;
  /** Called when a reload fails; the last good set stays in force. @default logs a warning */
  onError?: ((error: RulesError) => void) | undefined;
  /**
   * Runs on every set before it is put in force, the first one included, and throws for one
   * the caller cannot use (a rule with more policies than its store decides at once): that set
   * is refused as a bad document is, at start-up or by keeping the set in force. A throw that
   * is no `RulesError` is reported as `ERR_SLUICE_RULES_INVALID_POLICY` at the set's source.
   */
  check?: ((rules: RuleSet) => void) | undefined;
}

/** The rule set in force and how reloads went (the counts mirror envoyproxy/ratelimit's `config_load_*`). */
export interface RulesWatcher {
  /** The rule set in force: always a whole, validated set. */
  readonly current: RuleSet;
  /** Successful swaps since start. */
  readonly reloads: number;
  /** Failed reloads since start; each kept the set in force. */
  readonly errors: number;
  /** Reloads now, whatever the trigger says; resolves when done. */
  reload(): Promise<void>;
  /**
   * Stops watching and releases every handle. Resolves at once: a read under way (Redis may
   * be slow to answer, or down) is left to end on its own, and what it brings is dropped.
   */
  close(): Promise<void>;
}

export interface Reloader {
  readonly watcher: RulesWatcher;
  /**
   * Asks for a reload after the debounce delay; a burst of calls makes one reload, and a burst
   * that never pauses (a busy neighbour file, a poll shorter than the debounce) still reloads
   * once every `MAX_WAIT_DEBOUNCES` delays, and puts a new text in force then only once two
   * reads a delay apart agree.
   */
  schedule(): void;
  /** The source answered: a read that fails after this is a new outage, reported again. */
  readable(): void;
  /** Runs `release` once, on close. */
  onClose(release: () => void): void;
}

/** How many debounce delays a reload may be put off by calls that keep coming. */
export const MAX_WAIT_DEBOUNCES = 10;

const warn = (error: RulesError): void =>
  console.warn(`${error.message}\n[sluice] The rules in force stay as they were.`);

/** Calls a user's callback; one that throws must not stop the reloads or reject anything. */
function safely<T>(callback: ((value: T) => void) | undefined, value: T): void {
  try {
    callback?.(value);
  } catch (error) {
    console.error('[sluice] A rules callback threw:', error);
  }
}

/**
 * Debounce, re-read everything, validate, swap one reference: the pattern envoyproxy/ratelimit
 * and its peers share. Reloads never overlap; a trigger during one runs another after it, so
 * the last change always wins. A failed reload keeps the set in force and reports the error.
 * Every reload that swaps or fails is published on `sluice:rules-reload` for metrics (§9).
 */
export function createReloader(
  initial: RulesText,
  read: () => Promise<RulesText>,
  options: ReloadOptions & { debounceMs: number; source: string },
): Reloader {
  const built = (text: RulesText): RuleSet => {
    const rules = text.build();
    try {
      options.check?.(rules);
    } catch (error) {
      if (isRulesError(error)) throw error;
      const message = messageOf(error);
      const problem = {
        code: 'ERR_SLUICE_RULES_INVALID_POLICY' as const,
        message,
        source: options.source,
        line: 1,
        column: 1,
      };
      throw new RulesError([problem], { cause: error });
    }
    return rules;
  };
  let loaded = { text: initial.text, rules: built(initial) };
  // What failed last, a text or a read (by its error's message): a bad document, or a missing
  // directory whose parent keeps changing, is reported once, not on every event or poll.
  let failedText: string | undefined;
  let failedRead: string | undefined;
  let reloads = 0;
  let errors = 0;
  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  // When the reload now waited for was first asked for: the debounce restarts on every call,
  // but never past `MAX_WAIT_DEBOUNCES` delays from here.
  let askedAt: number | undefined;
  // Whether the reload to run next was forced by that cap while events kept coming, rather than
  // by a pause in them.
  let forced = false;
  // The text a forced reload read and left aside, and when it was first read. Events that
  // never pause may be a file written slowly in place, read half-done: a forced reload puts a
  // new text in force (or reports it) only when a read at least a delay later finds the same,
  // since a cut that happens to be valid would otherwise be put in force.
  let unsettled: { text: string; readAt: number } | undefined;
  let running: Promise<void> | undefined;
  let again = false;
  const releases: (() => void)[] = [];

  const fail = (error: unknown): void => {
    errors++;
    publishRulesReload({ source: options.source, ok: false, error });
    safely(options.onError ?? warn, error as RulesError);
  };

  const wait = (delayMs: number, waitRanOut: boolean): void => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      askedAt = undefined;
      void run(waitRanOut);
    }, delayMs);
    timer.unref();
  };

  const once = async (force: boolean): Promise<void> => {
    let next: RulesText;
    try {
      next = await read();
    } catch (error) {
      const message = (error as Error).message;
      if (closed || message === failedRead) return;
      failedRead = message;
      failedText = undefined;
      fail(error);
      return;
    }
    failedRead = undefined;
    if (closed || next.text === failedText) return;
    if (next.text === loaded.text) {
      failedText = undefined;
      unsettled = undefined;
      return;
    }
    if (force) {
      const now = Date.now();
      if (next.text !== unsettled?.text) unsettled = { text: next.text, readAt: now };
      const settledAt = unsettled.readAt + options.debounceMs;
      if (now < settledAt) {
        // Read again then, whether or not the events go on.
        askedAt = settledAt - MAX_WAIT_DEBOUNCES * options.debounceMs;
        wait(settledAt - now, true);
        return;
      }
    }
    unsettled = undefined;
    try {
      loaded = { text: next.text, rules: built(next) };
    } catch (error) {
      failedText = next.text;
      fail(error);
      return;
    }
    failedText = undefined;
    reloads++;
    publishRulesReload({ source: options.source, ok: true });
    safely(options.onReload, loaded.rules);
  };

  const run = (waitRanOut = false): Promise<void> => {
    forced = waitRanOut;
    if (running !== undefined) {
      again = true;
      return running;
    }
    running = (async () => {
      do {
        again = false;
        await once(forced);
      } while (again && !closed);
    })().finally(() => {
      running = undefined;
    });
    return running;
  };

  const watcher: RulesWatcher = {
    get current() {
      return loaded.rules;
    },
    get reloads() {
      return reloads;
    },
    get errors() {
      return errors;
    },
    reload: () => (closed ? Promise.resolve() : run()),
    async close() {
      if (closed) return;
      closed = true;
      clearTimeout(timer);
      for (const release of releases.splice(0)) release();
    },
  };
  return {
    watcher,
    schedule() {
      if (closed) return;
      const now = Date.now();
      askedAt ??= now;
      const left = askedAt + MAX_WAIT_DEBOUNCES * options.debounceMs - now;
      wait(Math.max(0, Math.min(options.debounceMs, left)), options.debounceMs > 0 && left < options.debounceMs);
    },
    readable() {
      failedRead = undefined;
    },
    onClose(release) {
      releases.push(release);
    },
  };
}
