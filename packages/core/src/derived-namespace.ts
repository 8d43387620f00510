import { createHash } from 'node:crypto';

/** `length` characters of the SHA-256 of `text` in base64url: a short name the same in every process. */
export const shortHash = (text: string, length: number): string =>
  createHash('sha256').update(text).digest('base64url').slice(0, length);

/**
 * `root` made to fit `room` characters, for a namespace derived from it within a prefix's 64:
 * itself when it fits, else its start and a hash of the whole, so that two roots alike in
 * their start never derive one namespace.
 */
export function fittedRoot(root: string, room: number): string {
  if (root.length <= room) return root;
  return `${root.slice(0, room - 13)}.${shortHash(root, 12)}`;
}
