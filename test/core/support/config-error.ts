import { createLimiter, isSluiceError, type LimiterOptions } from '@sluice/core';
import { expect } from 'vitest';

export const base = { limit: 10, window: '1s' } as const;

/** [what is wrong, options, code, text the message must contain (the option and the value)] */
export type ConfigCase = [string, Record<string, unknown>, string, string[]];

export function expectConfigError(options: Record<string, unknown>, code: string, mentions: readonly string[]): void {
  let thrown: unknown;
  try {
    createLimiter(options as unknown as LimiterOptions);
  } catch (error) {
    thrown = error;
  }
  expect(isSluiceError(thrown)).toBe(true);
  expect((thrown as { code: string }).code).toBe(code);
  for (const text of mentions) expect((thrown as Error).message).toContain(text);
}
