import { writeFileSync } from 'node:fs';
import type { RunResults } from '../results.js';
import { summariseHttp } from './http-summary.js';
import { renderMarkdown } from './markdown.js';
import { renderSvg } from './svg.js';
import { checkTargets } from './targets.js';

/** Writes `<base>.md` and `<base>.svg` from one run's raw results. */
export function writeReport(results: RunResults, base: string): void {
  const http = summariseHttp(results.http);
  const checks = checkTargets(results, http);
  writeFileSync(`${base}.md`, renderMarkdown(results, http, checks));
  writeFileSync(`${base}.svg`, renderSvg(results, http));
}
