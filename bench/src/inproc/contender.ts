export type Mode = 'pass' | 'deny';

export interface Setup {
  mode: Mode;
  /** Port of the private redis-server, for Redis-backed contenders. */
  redisPort: number | undefined;
  /** Keys a bounded store must hold: 100k for throughput, 1M for the memory measurement. */
  maxKeys: number;
}

/** One limiter API, called exactly as its users call it. */
export interface Contender {
  /** One decision for one client key. A rejected promise is a possible outcome (rate-limiter-flexible's deny). */
  call(key: string): unknown;
  /**
   * Reads a settled call: was the request allowed? `undefined` when the limiter did not
   * decide (a store failure it failed open on), which validation reports as unexpected.
   */
  allowed(result: unknown, rejected: boolean): boolean | undefined;
  close(): Promise<void> | void;
}

export type ContenderFactory = (setup: Setup) => Promise<Contender>;

/** Thrown when a contender's package is not built yet; the run reports it instead of failing. */
export class Unavailable extends Error {}

/** Pass runs set a limit no run can reach; deny runs allow one request, so every later one is refused. */
export const PASS_LIMIT = 1e9;
export const limitFor = (mode: Mode): number => (mode === 'pass' ? PASS_LIMIT : 1);
/**
 * One minute on the pass path (10⁹ per minute stays within sluice's limit × window bound); one
 * hour on the deny path, so that no window boundary during a run hands the spent keys a fresh
 * quota and turns a deny cell into a pass cell.
 */
export const windowFor = (mode: Mode): number => (mode === 'pass' ? 60_000 : 3_600_000);

/** A named export of a workspace package that may still be a stub while it is being built. */
export async function exportOf<T>(specifier: string, name: string): Promise<T> {
  const module = (await import(specifier)) as Record<string, unknown>;
  const value = module[name];
  if (value === undefined) throw new Unavailable(`${specifier} does not export ${name} yet`);
  return value as T;
}
