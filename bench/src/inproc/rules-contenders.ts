import { type Contender, type ContenderFactory, exportOf } from './contender.js';

/** The rule set's size the matching target is stated for (issue 16: under 1 µs against 1,000). */
const DESCRIPTORS = 1000;

interface RuleSetLike {
  match(domain: string, descriptors: readonly (readonly { key: string; value: string }[])[]): readonly unknown[];
}

/** 1,000 route descriptors, each limiting per client beneath it, written as an operator would. */
function rulesText(): string {
  const lines = ['domain: bench', 'descriptors:'];
  for (let i = 0; i < DESCRIPTORS; i++) {
    lines.push(
      '  - key: route',
      `    value: GET /api/r${i}/:id`,
      '    descriptors:',
      '      - key: remote_address',
      `        policies: [{ name: r${i}, limit: 100, window: 1m }]`,
    );
  }
  return `${lines.join('\n')}\n`;
}

/** How the reports name this cell: a match, not a decision. */
export const rulesLabels: Record<string, string> = {
  'sluice-rules-match:memory': 'sluice rules: match one request against 1,000 descriptors (no decision)',
};

/**
 * Matching alone, as the adapters and the decision service run it per request: one request's
 * descriptor (route, then client address) built and matched against the rule set. No store
 * is asked; the decision's own cost is in the `createLimiter` rows.
 */
export const rulesContenders: Record<string, ContenderFactory> = {
  'sluice-rules-match:memory': async () => {
    const parseRules = await exportOf<(text: string) => RuleSetLike>('@sluice/rules', 'parseRules');
    const rules = parseRules(rulesText());
    const routes = Array.from({ length: DESCRIPTORS }, (_, i) => `GET /api/r${i}/:id`);
    let next = 0;
    const contender: Contender = {
      call(key) {
        const route = routes[next] as string;
        next = next + 1 === DESCRIPTORS ? 0 : next + 1;
        return rules.match('bench', [
          [
            { key: 'route', value: route },
            { key: 'remote_address', value: key },
          ],
        ]);
      },
      allowed: (result) => (result as readonly unknown[])[0] !== undefined,
      close: () => {},
    };
    return contender;
  },
};
