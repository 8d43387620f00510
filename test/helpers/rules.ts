import { isRulesError, parseRules, type RuleProblem } from '@sluice/rules';

/** The problems `parseRules` refuses `text` with; throws when it accepts the text. */
export function problemsOf(text: string): RuleProblem[] {
  try {
    parseRules(text);
  } catch (error) {
    if (isRulesError(error)) return [...error.problems];
    throw error;
  }
  throw new Error('expected the rules to be refused');
}
