import { limitFor, type Mode, windowFor } from '../../inproc/contender.js';

export interface AppSetup {
  /** `bare`, or `<limiter>:<store>` such as `sluice:redis`. */
  variant: string;
  mode: Mode;
  redisPort: number | undefined;
}

/** Starts the app listening on 127.0.0.1:port; resolves with a function that closes it. */
export type StartApp = (setup: AppSetup, port: number) => Promise<() => Promise<void>>;

/** The same small JSON body from every framework. */
export const body = { hello: 'world' };

/** The limit and window every limiter of a job gets (see `windowFor`). */
export const limits = (mode: Mode) => ({ max: limitFor(mode), windowMs: windowFor(mode) });

/** Sluice adapters' options for a run: the default algorithm, and every other default kept. */
export const sluiceLimit = (mode: Mode) => ({ limit: limitFor(mode), window: windowFor(mode) });
