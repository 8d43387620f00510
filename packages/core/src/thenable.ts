/**
 * Whether a user's function answered with a promise of any kind: a native one, or another
 * library's (a hand-made thenable, an older promise library's), which `await` takes alike but
 * `instanceof Promise` misses. For adapters too.
 */
export const isThenable = (value: unknown): value is PromiseLike<unknown> =>
  typeof (value as PromiseLike<unknown> | null | undefined)?.then === 'function';
