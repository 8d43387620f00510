import { lstatSync, readlinkSync, type Stats } from 'node:fs';
import { join, parse, resolve, sep } from 'node:path';

// As Linux's limit on symlinks followed in one lookup (ELOOP): a cycle ends here.
const MAX_SYMLINKS = 40;

const lstatOrUndefined = (path: string): Stats | undefined => {
  try {
    return lstatSync(path);
  } catch {
    return undefined;
  }
};

const readlinkOrUndefined = (path: string): string | undefined => {
  try {
    return readlinkSync(path);
  } catch {
    return undefined;
  }
};

/**
 * The real directories whose entries decide what `path` reads, found by resolving it one name
 * at a time: the directory holding each symlink followed (a runtime root's `current`, a
 * ConfigMap's `..data`, a `--rules` link to a file kept elsewhere), the real directory holding
 * the file, and the real directory itself when `path` is one. A change of any of them is an
 * event in one of these, whatever was swapped, renamed or edited. Where a name is missing, its
 * would-be parent is watched instead, so its creation is seen.
 */
export function directoriesLeadingTo(path: string): string[] {
  const dirs = new Set<string>();
  let at = ''; // Always real: every name before `rest` is resolved.
  let rest: string[] = [];
  const restart = (absolute: string): void => {
    at = parse(absolute).root;
    rest = absolute.slice(at.length).split(sep).filter(Boolean);
  };
  restart(resolve(path));
  let links = 0;
  for (;;) {
    const [name, ...after] = rest;
    if (name === undefined) {
      dirs.add(at); // `path` is the root itself
      break;
    }
    const next = join(at, name);
    const stats = lstatOrUndefined(next);
    const target = stats?.isSymbolicLink() && links < MAX_SYMLINKS ? readlinkOrUndefined(next) : undefined;
    if (target !== undefined) {
      links++;
      dirs.add(at);
      restart(join(resolve(at, target), ...after));
      continue;
    }
    if (stats === undefined || after.length === 0 || !stats.isDirectory()) {
      dirs.add(at);
      if (after.length === 0 && stats?.isDirectory()) dirs.add(next);
      break;
    }
    at = next;
    rest = after;
  }
  return [...dirs];
}

/**
 * The directories to watch for a watcher of `path` reading `files`: those leading to `path`,
 * and for each file that is a symlink (a directory of links to files kept elsewhere, as
 * nginx's `sites-enabled`), those leading to what it points to, where an edit of the linked
 * file is an event.
 */
export function directoriesDeciding(path: string, files: readonly string[]): string[] {
  const dirs = new Set(directoriesLeadingTo(path));
  for (const file of files) {
    if (lstatOrUndefined(file)?.isSymbolicLink()) for (const dir of directoriesLeadingTo(file)) dirs.add(dir);
  }
  return [...dirs];
}
