import { isSluiceError, SluiceError, type SluiceErrorCode } from '@sluice/core';

/** One thing wrong with a rules document, located in its file. Lines and columns count from 1. */
export interface RuleProblem {
  readonly code: SluiceErrorCode;
  readonly message: string;
  /** The file name, or what `parseRules` was given as `source` (default `'<rules>'`). */
  readonly source: string;
  readonly line: number;
  readonly column: number;
}

/**
 * A problem with reading the rules (a file, a directory, Redis) rather than with their text:
 * it has no place of its own, so it stands at the start, line 1, column 1, as lines and
 * columns count from 1 everywhere.
 */
export const readProblem = (source: string, message: string): RuleProblem => ({
  code: 'ERR_SLUICE_RULES_READ',
  message,
  source,
  line: 1,
  column: 1,
});

/**
 * Every problem of a rules document at once, so an operator fixes a file in one pass. The
 * error's own `code` is the first problem's; `problems` holds them all in file order.
 */
export class RulesError extends SluiceError {
  readonly problems: readonly RuleProblem[];

  constructor(problems: readonly RuleProblem[], options?: { cause?: unknown }) {
    const sorted = [...problems].sort((a, b) =>
      a.source < b.source ? -1 : a.source > b.source ? 1 : a.line - b.line || a.column - b.column,
    );
    const first = sorted[0] as RuleProblem;
    const lines = sorted.map((p) => `  ${p.source}:${p.line}:${p.column} ${p.message} (${p.code})`);
    const count = problems.length === 1 ? 'a problem' : `${problems.length} problems`;
    super(first.code, `[sluice] The rules have ${count}:\n${lines.join('\n')}`, options);
    this.name = 'RulesError';
    this.problems = Object.freeze(sorted);
  }
}

/**
 * Core's verdict on a policy, as a problem of the rule that holds it tells it: core's message
 * without its `[sluice]` mark, and the code it came from (the problem has a code of its own).
 */
export const coreVerdict = (error: SluiceError): string =>
  `${error.message.replace(/^\[sluice\] /, '')} (from ${error.code})`;

/** True for an error of a rules document, whichever copy of this package created it. */
export function isRulesError(value: unknown): value is RulesError {
  return isSluiceError(value) && Array.isArray((value as { problems?: unknown }).problems);
}
