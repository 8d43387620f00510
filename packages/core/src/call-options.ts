import { describe, SluiceError } from './errors.js';

/**
 * Checks the options of a limiter's method (`consume`'s `{ cost }`, `refund`'s `{ chargedAt }`):
 * a plain object naming only what it takes (`known`). Options that are not one (`consume(key, 5)`, an array, a
 * Map, a Date) or name anything else (`{ costs: 5 }`, rate-limiter-flexible's `points`) would
 * otherwise be read as none, without a word. The names are walked with `for…in`, which
 * allocates nothing: the HTTP middleware passes options with every request its own functions
 * decide.
 */
export function checkCallOptions(options: unknown, call: string, known: readonly string[], example: string): void {
  if (!isPlainObject(options))
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `[sluice] The options of ${call} must be an object such as \`${example}\`; received ${describe(options)}.`,
    );
  for (const name in options) {
    if (!known.includes(name)) {
      const names = known.map((option) => `\`${option}\``);
      const list = names.length === 1 ? `its only option is ${names[0]}` : `its options are ${names.join(' and ')}`;
      throw new SluiceError('ERR_SLUICE_UNKNOWN_OPTION', `[sluice] Unknown option \`${name}\` of ${call}; ${list}.`);
    }
  }
}

/**
 * An object of options, read by its tag, not its prototype, so an object from another realm (a
 * `vm` context) or of a class of the app's own passes as it should.
 */
const isPlainObject = (value: unknown): value is object =>
  typeof value === 'object' && value !== null && toTag.call(value) === '[object Object]';
const toTag = Object.prototype.toString;
