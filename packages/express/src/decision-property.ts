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
 * or on a prototype between by someone else) or where the request has an own `rateLimit`
 * already (set by `Object.defineProperty`), the decision is defined on the request itself,
 * replacing theirs: a getter of their own, which an assignment would throw on, included.
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

/**
 * Makes `decision` the request's `req.rateLimit`; false where the request holds a `rateLimit`
 * that can be neither replaced nor assigned (defined not configurable, with neither a value to
 * write nor a setter that takes it, or on a frozen request), which is left as it is.
 */
export function setRateLimit(req: Request, decision: Decision): boolean {
  const prototype = Object.getPrototypeOf(req) as object | null;
  if (prototype !== lastPrototype) {
    lastUsable = prototype !== null && (bases.get(prototype) ?? withAccessor(prototype));
    lastPrototype = prototype;
  }
  if (lastUsable && !Object.hasOwn(req, 'rateLimit')) {
    keepDecision(req, decision);
    return true;
  }
  return defineOwn(req, decision);
}

/** `decision` as the request's own `rateLimit`, whatever defined one before, where the request lets it. */
function defineOwn(req: Request, decision: Decision): boolean {
  const own = Object.getOwnPropertyDescriptor(req, 'rateLimit');
  if (own !== undefined && own.configurable !== true) {
    // Theirs for good: assigned where it takes an assignment (writable, or with a setter,
    // which may refuse it by throwing).
    if (own.writable !== true && own.set === undefined) return false;
    try {
      req.rateLimit = decision;
      return true;
    } catch {
      return false;
    }
  }
  if (own === undefined && !Object.isExtensible(req)) return false;
  Object.defineProperty(req, 'rateLimit', { value: decision, writable: true, enumerable: true, configurable: true });
  return true;
}

/** Whether `req.rateLimit` reads the decisions kept here for requests of this prototype; defines the accessor if it can. */
function withAccessor(prototype: object): boolean {
  const base = expressBase(prototype);
  if (base !== undefined && !Object.hasOwn(base, 'rateLimit')) Object.defineProperty(base, 'rateLimit', accessor);
  const usable =
    base !== undefined &&
    Object.getOwnPropertyDescriptor(base, 'rateLimit')?.get === accessor.get &&
    !shadowedBefore(prototype, base);
  bases.set(prototype, usable);
  return usable;
}

/** Whether a prototype from `prototype` up to `base` (not included) defines a `rateLimit` of its own, which requests would read instead. */
function shadowedBefore(prototype: object, base: object): boolean {
  for (let at: object | null = prototype; at !== null && at !== base; at = Object.getPrototypeOf(at) as object | null) {
    if (Object.hasOwn(at, 'rateLimit')) return true;
  }
  return false;
}

/** The object in the request's prototype chain that inherits from Node's IncomingMessage directly: Express's base request. */
function expressBase(prototype: object): object | undefined {
  for (let at: object | null = prototype; at !== null; at = Object.getPrototypeOf(at) as object | null) {
    if (Object.getPrototypeOf(at) === IncomingMessage.prototype) return at;
  }
  return undefined;
}
