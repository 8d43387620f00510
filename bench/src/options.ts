import { parseArgs } from './lib/args.js';

export const SECTIONS = ['inproc', 'watch', 'heap', 'redis', 'http', 'service'] as const;
export type Section = (typeof SECTIONS)[number];

export interface Options {
  quick: boolean;
  sections: Section[];
  /** HTTP cycles: each contender's ratio is the median over this many pairs of neighbouring runs. */
  cycles: number;
  /** Regenerate the report from a raw JSON file instead of measuring. */
  report: string | undefined;
}

const usage = `pnpm bench [--quick] [--only inproc,watch,heap,redis,http,service] [--cycles N] [--report results/raw/<file>.json]`;

export function readOptions(argv: readonly string[]): Options {
  const args = parseArgs(argv);
  for (const name of args.keys()) {
    if (!['quick', 'only', 'cycles', 'report', 'help'].includes(name))
      throw new Error(`unknown option --${name}\n${usage}`);
  }
  if (args.has('help')) {
    process.stdout.write(`${usage}\n`);
    process.exit(0);
  }
  const quick = args.has('quick');
  const only = args.get('only')?.split(',') ?? [...SECTIONS];
  const unknown = only.filter((s) => !(SECTIONS as readonly string[]).includes(s));
  if (unknown.length > 0) throw new Error(`unknown section ${unknown.join(', ')}\n${usage}`);
  const cycles = Number(args.get('cycles') ?? (quick ? 5 : 7));
  if (!Number.isInteger(cycles) || cycles < 1 || cycles > 30) throw new Error(`--cycles takes 1 to 30\n${usage}`);
  return { quick, sections: only as Section[], cycles, report: args.get('report') };
}
