import { parseItem } from 'structured-headers';
import { describe, expect, it } from 'vitest';
import { SF_INTEGER_MAX, sfInteger, sfSeconds, sfString } from '../../../packages/core/src/http/structured-fields.js';

describe('structured-field serialisers', () => {
  it('clamps integers to the sf-integer range and never shortens a wait', () => {
    expect(sfInteger(0)).toBe('0');
    expect(sfInteger(-3)).toBe('0');
    expect(sfInteger(Number.NaN)).toBe('0');
    expect(sfInteger(2.1)).toBe('3');
    expect(sfInteger(Number.POSITIVE_INFINITY)).toBe(String(SF_INTEGER_MAX));
    expect(sfInteger(2 ** 60)).toBe(String(SF_INTEGER_MAX));
    expect(parseItem(sfInteger(2 ** 60))[0]).toBe(SF_INTEGER_MAX);
  });

  it('rounds milliseconds up to whole seconds', () => {
    expect([1, 999, 1000, 1001, 59_999].map(sfSeconds)).toEqual(['1', '1', '1', '2', '60']);
  });

  it('escapes strings so a strict parser reads them back', () => {
    for (const value of ['plain', 'with "quotes"', 'back\\slash', '']) {
      expect(parseItem(sfString(value))[0]).toBe(value);
    }
  });

  it('refuses characters an sf-string cannot carry', () => {
    expect(() => sfString('line\nbreak')).toThrow(TypeError);
    expect(() => sfString('café')).toThrow(TypeError);
  });
});
