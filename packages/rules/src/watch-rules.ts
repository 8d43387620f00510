import { type FSWatcher, realpathSync, statSync, watch } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { SluiceError } from '@sluice/core';
import { RulesError, readProblem } from './errors.js';
import { loadRulesText, loadRulesTextSync } from './load-rules.js';
import { createReloader, type Reloader, type ReloadOptions, type RulesWatcher } from './reloader.js';

export interface WatchRulesOptions extends ReloadOptions {
  /** Quiet time after the last file event before reloading: an editor's save is several events. @default 100 */
  debounceMs?: number;
  /**
   * Also re-read every this many ms, for mounts where file events never arrive (NFS, SMB,
   * some container volumes). Unchanged files cost a read and a compare. @default off
   */
  pollIntervalMs?: number;
}

function checkOptions(options: WatchRulesOptions): void {
  const bad = (option: string, expected: string): never => {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `[sluice] Option \`${option}\` must be ${expected}.`);
  };
  const { debounceMs, pollIntervalMs, onReload, onError } = options;
  if (debounceMs !== undefined && !(Number.isSafeInteger(debounceMs) && debounceMs >= 0))
    bad('debounceMs', 'a whole number of milliseconds, 0 or more');
  if (pollIntervalMs !== undefined && !(Number.isSafeInteger(pollIntervalMs) && pollIntervalMs > 0))
    bad('pollIntervalMs', 'a positive whole number of milliseconds');
  if (onReload !== undefined && typeof onReload !== 'function') bad('onReload', 'a function');
  if (onError !== undefined && typeof onError !== 'function') bad('onError', 'a function');
}

const realpathOrUndefined = (path: string): string | undefined => {
  try {
    return realpathSync(path);
  } catch {
    return undefined;
  }
};

/**
 * Watches one directory with `fs.watch`, never a file: a watch on a file goes deaf after an
 * editor's atomic save (write a temporary file, rename it over the old one).
 */
function watchDirectory(dir: string, reloader: Reloader, onEvent: () => void): FSWatcher | undefined {
  try {
    // A watch that fails (its directory removed) leads to a reload, whose error says why.
    return watch(dir, { persistent: false }, onEvent).on('error', reloader.schedule);
  } catch {
    return undefined;
  }
}

/**
 * Loads the rules at `path` (a file, or a directory of files) and keeps them current. The
 * first load happens here, so a bad document throws at start-up. Then any change in the
 * directory (an in-place write, an editor's atomic save, a Kubernetes ConfigMap's `..data`
 * symlink swap, a symlinked directory swapped for another) leads, after `debounceMs` of quiet,
 * to a re-read of every file; a valid result replaces the whole set at once, a bad one keeps
 * the set in force and goes to `onError`.
 *
 * @example
 * const rules = watchRules('/etc/sluice/rules', { onError: (e) => log.error(e.message) });
 * rules.current.match('api', descriptors);
 */
export function watchRules(path: string, options: WatchRulesOptions = {}): RulesWatcher {
  checkOptions(options);
  const target = resolve(path);
  const reloader = createReloader(loadRulesTextSync(target), () => loadRulesText(target), {
    ...options,
    debounceMs: options.debounceMs ?? 100,
    source: target,
  });
  // The directory itself, when `path` is one; it is watched again when a symlink swap makes
  // `path` another directory (envoyproxy/ratelimit's symlinked runtime root).
  let inner: { real: string; watcher: FSWatcher | undefined } | undefined;
  const rewatchInner = (): void => {
    const real = realpathOrUndefined(target);
    if (real === inner?.real) return;
    inner?.watcher?.close();
    const isDirectory = real !== undefined && statSync(real, { throwIfNoEntry: false })?.isDirectory() === true;
    inner = isDirectory ? { real, watcher: watchDirectory(target, reloader, reloader.schedule) } : undefined;
  };
  rewatchInner();
  const outer = watchDirectory(dirname(target), reloader, () => {
    rewatchInner();
    reloader.schedule();
  });
  if (outer === undefined) {
    throw new RulesError([readProblem(dirname(target), 'Cannot watch the directory.')]);
  }
  const poll =
    options.pollIntervalMs === undefined ? undefined : setInterval(reloader.schedule, options.pollIntervalMs);
  poll?.unref();
  reloader.onClose(() => {
    outer.close();
    inner?.watcher?.close();
    clearInterval(poll);
  });
  return reloader.watcher;
}
