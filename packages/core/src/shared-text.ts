/**
 * The same text as V8's one shared copy (the copy property names use). Strings compared on
 * every decision — a store's namespace against the last one it saw, a policy's name in the
 * metrics' tally — are compared by the optimising compiler through a routine call (some 35
 * instructions) unless V8 knows both are shared copies, when it compares addresses. Text that
 * reads as an array index (a `prefix` of digits) comes back as a new string: the same text,
 * without the saving.
 */
export function internalized(text: string): string {
  return Object.keys({ [text]: true })[0] ?? text;
}
