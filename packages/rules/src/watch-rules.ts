import { type FSWatcher, watch } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { invalid, isTimerMs, MAX_TIMER_MS } from '@sluice/core';
import { RulesError, readProblem } from './errors.js';
import { type ParsedFiles, type RulesTree, readRulesText, readRulesTextSync, rulesTreeSync } from './load-rules.js';
import { checkName, checkSourceOptions } from './options.js';
import { createReloader, type Reloader, type ReloadOptions, type RulesWatcher } from './reloader.js';
import { directoriesDeciding } from './watched-directories.js';

export interface WatchRulesOptions extends ReloadOptions {
  /** Quiet time after the last file event before reloading: an editor's save is several events. @default 100 */
  debounceMs?: number | undefined;
  /**
   * Also re-read every this many ms, for mounts where file events never arrive (NFS, SMB,
   * some container volumes). Unchanged files cost a read and a compare. @default off
   */
  pollIntervalMs?: number | undefined;
}

function checkOptions(path: unknown, options: WatchRulesOptions): void {
  checkName(path, 'path');
  checkSourceOptions(options, 'watchRules', ['debounceMs', 'pollIntervalMs', 'onReload', 'onError', 'check']);
  const bad = (option: keyof WatchRulesOptions, expected: string): never =>
    invalid('ERR_SLUICE_INVALID_OPTION', option, options[option], expected);
  const { debounceMs, pollIntervalMs } = options;
  // Node runs a timer of more than 2^31 - 1 ms after 1 ms: such a poll would re-read the
  // rules a thousand times a second.
  if (debounceMs !== undefined && !isTimerMs(debounceMs, 0))
    bad('debounceMs', `a whole number of milliseconds from 0 to ${MAX_TIMER_MS}`);
  if (pollIntervalMs !== undefined && !isTimerMs(pollIntervalMs, 1))
    bad('pollIntervalMs', `a whole number of milliseconds from 1 to ${MAX_TIMER_MS}`);
}

/**
 * Watches one directory with `fs.watch`, never a file: a watch on a file goes deaf after an
 * editor's atomic save (write a temporary file, rename it over the old one).
 */
function watchDirectory(dir: string, onEvent: () => void): FSWatcher | undefined {
  try {
    // A watch that fails (its directory removed) leads to a reload, which watches anew.
    return watch(dir, { persistent: false }, onEvent).on('error', onEvent);
  } catch {
    return undefined;
  }
}

/** The rules files at `path`, or none while it cannot be read: the reload that follows reports why. */
function treeOrNone(path: string): RulesTree {
  try {
    return rulesTreeSync(path);
  } catch {
    return { files: [], subdirectories: [], ignored: [] };
  }
}

/**
 * Loads the rules at `path` (a file, or a directory of files) and keeps them current. The
 * first load happens here, so a bad document throws at start-up. Then any change of what
 * `path` reads (an in-place write, an editor's atomic save, a Kubernetes ConfigMap's `..data`
 * symlink swap, a runtime root's `current` symlink swapped, a directory replaced under the
 * same name, an edit of the file a symlink points to, `path` itself or a file of its
 * directory) leads, after `debounceMs` of quiet, to a re-read of every file; a valid result
 * replaces the whole set at once, a bad one keeps the set in force and goes to `onError`
 * (once per failing text or read error).
 *
 * @example
 * const rules = watchRules('/etc/sluice/rules', { onError: (e) => log.error(e.message) });
 * rules.current.match('api', descriptors);
 */
export function watchRules(path: string, options: WatchRulesOptions = {}): RulesWatcher {
  checkOptions(path, options);
  const target = resolve(path);
  let watchers: FSWatcher[] = [];
  let closed = false;
  // Every reload watches anew, before it reads: a directory replaced under the same name, a
  // symlink above the rules swapped, or a rules file's link pointed elsewhere, leaves a watch
  // on what is gone (and a new directory may even reuse the old inode number, so no identity
  // check is reliable). A change between the old watch and the new one is in the read that
  // follows. Every old watch is closed first: a directory no longer read is no longer watched.
  const rewatch = (): void => {
    if (closed) return;
    for (const watcher of watchers) watcher.close();
    const { files, subdirectories } = treeOrNone(target);
    // A subdirectory's own entries change in it alone: a file added or edited there.
    const dirs = [...new Set([...directoriesDeciding(target, files), ...subdirectories])];
    // Events arrive on a later turn of the event loop, once the reloader below exists.
    watchers = dirs.flatMap((dir) => watchDirectory(dir, () => reloader.schedule()) ?? []);
  };
  // The first load watches before it reads too: a change saved while a large set parses would
  // otherwise wait for the next change, or the next poll, to be seen.
  rewatch();
  const parsed: ParsedFiles = new Map();
  let reloader: Reloader;
  try {
    reloader = createReloader(
      readRulesTextSync(target, parsed),
      () => {
        rewatch();
        return readRulesText(target, parsed);
      },
      { ...options, debounceMs: options.debounceMs ?? 100, source: target },
    );
  } catch (error) {
    for (const watcher of watchers) watcher.close();
    throw error;
  }
  if (watchers.length === 0) {
    throw new RulesError([readProblem(dirname(target), 'Cannot watch the directory.')]);
  }
  const poll =
    options.pollIntervalMs === undefined ? undefined : setInterval(reloader.schedule, options.pollIntervalMs);
  poll?.unref();
  reloader.onClose(() => {
    closed = true;
    for (const watcher of watchers) watcher.close();
    clearInterval(poll);
  });
  return reloader.watcher;
}
