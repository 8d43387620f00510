import { IncomingMessage } from 'node:http';
import { type Decision, keepDecision, keptDecision } from '@sluice/core';
import type { Request } from 'express';

/**
 * `req.rateLimit`, kept without adding a property to the request. Express gives each request
 * its app's prototype as it arrives; a property added to such an object then gives it a hidden
 * class of its own, and every later property read on it, Express's included, goes the slow
 * way: in the HTTP benchmark that cost about 4 % of a request served on the memory store. So
 * the decisions are kept by core, beside the limiters that met the request (`keepDecision`),
 * read and written through an accessor defined once on Express's base request object, which
 * every app's request inherits from (Express's own way of extending requests: `express.request`).
 *
 * Where that cannot be done (no such base in the chain, or `rateLimit` already defined there
 * by someone else) or where the request has an own `rateLimit` already (set by
 * `Object.defineProperty`), the decision is assigned to the request as before.
 */
/** Prototypes looked at already: the ones given the accessor, and those that could not take it. */
const bases = new WeakMap<object, boolean>();

const accessor: PropertyDescriptor = {
  configurable: true,
  enumerable: false,
  get(this: object) {
    return keptDecision(this);
  },
  set(this: object, value: Decision | undefined) {
    keepDecision(this, value);
  },
};

/** The prototype of the last request, and whether its requests read the decisions kept here: the same app's, nearly always. */
let lastPrototype: object | null = null;
let lastUsable = false;

/** Makes `decision` the request's `req.rateLimit`. */
export function setRateLimit(req: Request, decision: Decision): void {
  const prototype = Object.getPrototypeOf(req) as object | null;
  if (prototype !== lastPrototype) {
    lastUsable = prototype !== null && (bases.get(prototype) ?? withAccessor(prototype));
    lastPrototype = prototype;
  }
  if (lastUsable && !Object.hasOwn(req, 'rateLimit')) keepDecision(req, decision);
  else req.rateLimit = decision;
}

/** Whether `req.rateLimit` reads the decisions kept here for requests of this prototype; defines the accessor if it can. */
function withAccessor(prototype: object): boolean {
  const base = expressBase(prototype);
  if (base !== undefined && !Object.hasOwn(base, 'rateLimit')) Object.defineProperty(base, 'rateLimit', accessor);
  const usable = base !== undefined && Object.getOwnPropertyDescriptor(base, 'rateLimit')?.get === accessor.get;
  bases.set(prototype, usable);
  return usable;
}

/** The object in the request's prototype chain that inherits from Node's IncomingMessage directly: Express's base request. */
function expressBase(prototype: object): object | undefined {
  for (let at: object | null = prototype; at !== null; at = Object.getPrototypeOf(at) as object | null) {
    if (Object.getPrototypeOf(at) === IncomingMessage.prototype) return at;
  }
  return undefined;
}
