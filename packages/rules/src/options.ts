import { checkOptionNames, invalid } from '@sluice/core';

/**
 * Checks the options object a rules source is given: an object naming only `known` options,
 * with `onReload` and `onError` functions when given. A misspelt option (`pollIntervalMS`)
 * would otherwise be dropped unseen and its default used.
 */
export function checkSourceOptions(options: unknown, caller: string, known: readonly string[]): void {
  if (typeof options !== 'object' || options === null || Array.isArray(options))
    invalid('ERR_SLUICE_INVALID_OPTION', 'options', options, `an object of ${caller}'s options`);
  checkOptionNames(options, known, caller);
  const { onReload, onError, check } = options as Record<string, unknown>;
  if (onReload !== undefined && typeof onReload !== 'function')
    invalid('ERR_SLUICE_INVALID_OPTION', 'onReload', onReload, 'a function');
  if (check !== undefined && typeof check !== 'function')
    invalid('ERR_SLUICE_INVALID_OPTION', 'check', check, 'a function');
  if (onError !== undefined && typeof onError !== 'function')
    invalid('ERR_SLUICE_INVALID_OPTION', 'onError', onError, 'a function');
}

/**
 * A path, Redis key or channel: text that is not empty. Anything else is refused rather than
 * made into text, where a number or an object would name a key nobody meant.
 */
export function checkName(value: unknown, option: string): asserts value is string {
  if (typeof value !== 'string' || value === '')
    invalid('ERR_SLUICE_INVALID_OPTION', option, value, 'text that is not empty');
}
