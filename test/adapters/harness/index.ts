import { expressHarness } from './express.js';
import { fastifyHarness } from './fastify.js';
import { koaHarness } from './koa.js';

export type { AppSpec, Harness, RunningApp, SuiteOptions } from './types.js';

/** The conformance suite runs every case against each of these. */
export const harnesses = [expressHarness, koaHarness, fastifyHarness];
