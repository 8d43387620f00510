import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { onTestFinished } from 'vitest';

/**
 * Collects what is published on the diagnostics channel `name` for the rest of the current
 * test; unsubscribes when the test finishes, so no listener leaks into the next one.
 */
export function listen<T>(name: string): T[] {
  const seen: T[] = [];
  const listener = (message: unknown) => seen.push(message as T);
  subscribe(name, listener);
  onTestFinished(() => {
    unsubscribe(name, listener);
  });
  return seen;
}
