/**
 * Defines read-only properties on `object` as a literal's `get` would (enumerable,
 * configurable). Not written in the literal: V8 (Node 20) keeps an object literal with an
 * accessor in dictionary mode, where every property load, such as the limiter's
 * `store.consumeOneSync` on each decision, is a generic lookup of some 70 instructions that
 * optimized code cannot inline. Defined afterwards, they leave the object fast as long as each
 * getter is one function for every object of its kind (reading its state through `this`): a
 * getter of its own per object would give every object after the first a dictionary again.
 */
export function withGetters<T extends object, G extends Record<string, (this: T) => unknown>>(
  object: T,
  getters: G,
): T & { readonly [K in keyof G]: ReturnType<G[K]> } {
  for (const [name, get] of Object.entries(getters)) {
    Object.defineProperty(object, name, { get, enumerable: true, configurable: true });
  }
  return object as T & { readonly [K in keyof G]: ReturnType<G[K]> };
}
