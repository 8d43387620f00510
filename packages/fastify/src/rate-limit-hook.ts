import {
  type AdapterBinding,
  createHttpLimiter,
  type Decision,
  type HttpLimiter,
  type HttpLimiterOptions,
  type Outcome,
  PROBLEM_CONTENT_TYPE,
  problemBody,
  type RulesHttpOptions,
  SluiceError,
  thrownError,
} from '@sluice/core';
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';

type LimitOptions = HttpLimiterOptions<FastifyRequest, FastifyReply> | RulesHttpOptions<FastifyRequest>;

export type OnLimited = (request: FastifyRequest, reply: FastifyReply, decision: Decision) => unknown;
type HookDone = Parameters<onRequestHookHandler>[2];

/** The request hooks a limit can run in; a later one sees what earlier hooks set, such as the authenticated user. */
export type RateLimitHook = 'onRequest' | 'preParsing' | 'preValidation' | 'preHandler';
const HOOKS: readonly unknown[] = ['onRequest', 'preParsing', 'preValidation', 'preHandler'];

/**
 * The Content-Type Fastify sends for `PROBLEM_CONTENT_TYPE`: it gives JSON types a charset.
 * Given whole, it spares Fastify parsing and rebuilding the type on every refusal.
 */
const PROBLEM_CONTENT_TYPE_UTF8 = `${PROBLEM_CONTENT_TYPE}; charset=utf-8`;

/** One limit as a Fastify request hook: its name (from `hook`), the handler, and its limiter. */
export interface RateLimitHookEntry {
  name: RateLimitHook;
  handler: unknown;
  /** The same limit for the context's not-found handler: it counts only requests that found no route. */
  notFoundHandler: unknown;
  limiter: HttpLimiter<FastifyRequest, FastifyReply>;
}

/** The default refusal, in the status the reply has (429, 503 when the store failed, or what `onLimited` set). */
function sendProblem(reply: FastifyReply, decision: Decision): void {
  reply.type(PROBLEM_CONTENT_TYPE_UTF8).send(problemBody(decision, reply.statusCode));
}

/**
 * A hook's failure, for Fastify's error handling. Once the reply was sent (by another hook,
 * while the limit awaited) Fastify would drop the error unseen, so it is logged as Fastify
 * logs a handler's.
 */
function fail(reason: unknown, reply: FastifyReply, done: HookDone, sent = reply.sent): void {
  const error = thrownError(reason) as Error;
  if (sent) reply.log.error({ err: error }, 'Promise errored, but reply.sent = true was set');
  else done(error);
}

/**
 * A refusal answered by `onLimited`. A refused request never reaches the handler, whatever
 * `onLimited` does (going on when it sent nothing let every refusal through). As from a Fastify
 * handler, a value it returns is the body; the checks on the reply are Fastify's own
 * (`wrap-thenable.js`). The reply has the refusal's status (429, 503, or a ban's) before it
 * runs, as in Koa, so a body it sends without one is not a 200 OK; what it throws, at once or
 * later, is answered under the status the reply had. Once it sent a reply Fastify would drop the
 * error unseen (a hook's error after a reply is not handled), so it is logged as Fastify logs a
 * handler's.
 *
 * Fastify marks a reply sent only once its `onSend` hooks have run: while an async one runs, a
 * reply `onLimited` sent looks unsent, and a second would follow it, each hook run twice and the
 * first reply's Content-Type overwritten. So its calls of `reply.send` are watched, through a
 * `send` of the reply's own for as long as it runs.
 */
function answerByOnLimited(
  onLimited: OnLimited | undefined,
  { decision, status }: Extract<Outcome, { refusal: undefined }>,
  request: FastifyRequest,
  reply: FastifyReply,
  done: HookDone,
): void {
  const { statusCode } = reply;
  let sendCalled = false;
  const { send } = reply;
  // A `send` another plugin put on the reply itself is watched through, and put back after.
  const own = Object.getOwnPropertyDescriptor(reply, 'send');
  reply.send = function watchedSend(this: FastifyReply, payload?: unknown) {
    const sending = send.call(this, payload);
    // Marked once it returned: one that throws (a payload Fastify refuses) sent nothing.
    sendCalled = true;
    return sending;
  };
  const unwatched = (): void => {
    if (own === undefined) delete (reply as { send?: unknown }).send;
    else Object.defineProperty(reply, 'send', own);
  };
  const answered = (): boolean => sendCalled || reply.sent || reply.raw.headersSent;
  reply.code(status);
  new Promise((resolve) => resolve(onLimited?.(request, reply, decision)))
    .then((body) => {
      unwatched();
      if (answered()) return;
      if (body === undefined) sendProblem(reply, decision);
      else reply.send(body);
    })
    .then(undefined, (reason: unknown) => {
      unwatched();
      const sent = answered();
      if (!sent) reply.code(statusCode);
      fail(reason, reply, done, sent);
    });
}

/**
 * The limit of the plugin or of one route, to run in the request hook its `hook` option names
 * (`onRequest` unless told otherwise).
 */
export function createRateLimitHook(
  binding: AdapterBinding<FastifyRequest, FastifyReply>,
  hookOptions: Record<string, unknown>,
): RateLimitHookEntry {
  // `undefined` alone means left out: a `null` is refused below, never read as the default.
  const hook = hookOptions.hook === undefined ? 'onRequest' : hookOptions.hook;
  if (!HOOKS.includes(hook)) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `[sluice] Option \`hook\` must be 'onRequest', 'preParsing', 'preValidation' or 'preHandler'; received ${JSON.stringify(hook)}.`,
    );
  }
  // The plugin's options with a limit of their own, or a route's merged over them: never only
  // `global: false`'s defaults, which no hook is made of.
  const limiter = createHttpLimiter(hookOptions as unknown as LimitOptions, binding, ['hook']);
  const onLimited = hookOptions.onLimited as OnLimited | undefined;
  const apply = (outcome: Outcome, request: FastifyRequest, reply: FastifyReply, done: HookDone): void => {
    if (outcome.decision !== undefined) request.rateLimit = outcome.decision;
    if (outcome.action === 'next') done();
    else if (outcome.action === 'gone') reply.hijack();
    else if (outcome.refusal === undefined) answerByOnLimited(onLimited, outcome, request, reply, done);
    else {
      const { status, contentType, body } = outcome.refusal;
      reply
        .code(status)
        .type(contentType === PROBLEM_CONTENT_TYPE ? PROBLEM_CONTENT_TYPE_UTF8 : contentType)
        .send(body);
    }
  };
  /** `apply` once a promised outcome lands: what it throws goes to `done`, as a rejection does. */
  const applyOrFail = (outcome: Outcome, request: FastifyRequest, reply: FastifyReply, done: HookDone): void => {
    try {
      apply(outcome, request, reply, done);
    } catch (error) {
      fail(error, reply, done);
    }
  };
  // A callback hook, not an async one: with an in-process store the decision is ready at
  // once, and Fastify then goes on without a promise. Replying ends the hook without `done`.
  const handler: onRequestHookHandler = function sluiceRateLimit(request, reply, done) {
    let outcome: Outcome | Promise<Outcome>;
    try {
      outcome = limiter.handle(request, reply);
    } catch (error) {
      fail(error, reply, done);
      return;
    }
    if (outcome instanceof Promise)
      outcome.then(
        (settled) => applyOrFail(settled, request, reply, done),
        (reason: unknown) => fail(reason, reply, done),
      );
    else apply(outcome, request, reply, done);
  };
  const notFound: onRequestHookHandler = function sluiceNotFoundLimit(request, reply, done) {
    if (request.is404) handler.call(this, request, reply, done);
    else done();
  };
  return {
    name: hook as RateLimitHook,
    handler: asHook(hook, handler),
    notFoundHandler: asHook(hook, notFound),
    limiter,
  };
}

/** `handler` as a hook of kind `hook`: preParsing hooks pass the payload stream on. */
const asHook = (hook: unknown, handler: onRequestHookHandler): unknown =>
  hook === 'preParsing'
    ? function sluicePreParsing(
        this: FastifyInstance,
        request: FastifyRequest,
        reply: FastifyReply,
        payload: unknown,
        done: (e?: Error | null, p?: unknown) => void,
      ) {
        handler.call(this, request, reply, (error?: Error) => done(error ?? null, payload));
      }
    : handler;
