import { execFileSync, spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCliOptions, prepareOut, USAGE } from '../../packages/simulator/src/report/cli-options.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sluice-simulate-cli-'));
});

afterAll(() => rm(dir, { recursive: true, force: true }));

/** `sluice-simulate <args>` run in `cwd`: its exit code and output. */
function simulateCli(
  args: string[],
  cwd: string,
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number | null; output: string }> {
  const child = spawn(
    `${root}node_modules/.bin/tsx`,
    ['--conditions=@sluice/source', `${root}packages/simulator/src/report/main.ts`, ...args],
    { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, output })));
}

const refused = (flag: string) =>
  expect.objectContaining({ code: 'ERR_SLUICE_INVALID_OPTION', message: expect.stringContaining(`--${flag}`) });

describe('pnpm simulate options', () => {
  it.each(['0x10', '1e1', ' 7', '5.0', '+5', '007', '0', '-3', '9007199254740993'])(
    "refuses --limit %j: a limit is digits only (Number() took 0x10, 1e1, ' 7' and 5.0)",
    (limit) => {
      expect(() => parseCliOptions([`--limit=${limit}`], dir)).toThrow(refused('limit'));
    },
  );

  // soft:1001 was refused in core's words, naming `throttle.overagePercent`.
  it.each(['soft:0x10', 'soft:1e1', 'soft:020', 'soft:', 'soft:1001'])('refuses --throttle %s', (throttle) => {
    expect(() => parseCliOptions(['--throttle', throttle], dir)).toThrow(refused('throttle'));
  });

  it('reads whole numbers written in digits', () => {
    expect(parseCliOptions(['--limit', '120', '--window', '1m', '--throttle', 'soft:20'], dir)).toMatchObject({
      trace: { limit: 120, windowMs: 60_000 },
      throttle: { mode: 'soft', overagePercent: 20 },
    });
  });

  it('refuses an empty --out, which resolved to the working directory and overwrote its README.md', () => {
    expect(() => parseCliOptions(['--out', ''], dir)).toThrow(refused('out'));
    expect(() => parseCliOptions(['--out', ' '], dir)).toThrow(refused('out'));
    expect(() => parseCliOptions(['--trace', ''], dir)).toThrow(refused('trace'));
  });

  it('creates the output directory, and refuses a file as one', async () => {
    const nested = join(dir, 'a', 'b');
    await prepareOut(nested);
    expect((await stat(nested)).isDirectory()).toBe(true);
    const file = join(dir, 'a-file');
    await writeFile(file, 'x');
    await expect(prepareOut(file)).rejects.toMatchObject({ code: 'ERR_SLUICE_INVALID_OPTION' });
    await expect(prepareOut(join(file, 'under'))).rejects.toMatchObject({ code: 'ERR_SLUICE_INVALID_OPTION' });
  });

  // Node's recursive mkdir looped for good there, at full CPU: the run never ended.
  it('refuses a directory that can never be made, such as one under /proc', async () => {
    await expect(prepareOut('/proc/sluice-charts/deeper')).rejects.toMatchObject({ code: 'ERR_SLUICE_INVALID_OPTION' });
    // One that exists, which root may "write" by `access`: its files failed once every scenario had run.
    await expect(prepareOut('/proc')).rejects.toMatchObject({ code: 'ERR_SLUICE_INVALID_OPTION' });
  });

  // Read, a FIFO waited for a writer for good: the run hung before its first scenario.
  it('refuses a README.md that is not a file, such as a FIFO, without waiting on it', async () => {
    const out = join(dir, 'page-is-a-fifo');
    await mkdir(out, { recursive: true });
    execFileSync('mkfifo', [join(out, 'README.md')]);
    await expect(prepareOut(out)).rejects.toMatchObject({
      code: 'ERR_SLUICE_INVALID_OPTION',
      message: expect.stringContaining('README.md is not a file'),
    });
  });

  // Read as absent, it failed the page's write once every scenario had run, leaving charts alone.
  it('refuses a README.md that is a directory', async () => {
    const out = join(dir, 'page-is-a-directory');
    await mkdir(join(out, 'README.md'), { recursive: true });
    await expect(prepareOut(out)).rejects.toMatchObject({
      code: 'ERR_SLUICE_INVALID_OPTION',
      message: expect.stringContaining('README.md is not a file'),
    });
  });

  it('fails on a bad --out before simulating anything, and leaves the working directory alone', async () => {
    const cwd = await mkdtemp(join(dir, 'cwd-'));
    await writeFile(join(cwd, 'README.md'), '# My project\n');
    await writeFile(join(cwd, 'somefile'), 'x');
    // An empty --out is a bad command line (exit 2, as `sluice serve`); a file found in its way, a failed run.
    for (const [out, exit] of [
      ['', 2],
      ['somefile', 1],
    ] as const) {
      const { code, output } = await simulateCli(['--out', out], cwd);
      expect(code).toBe(exit);
      expect(output).toContain('simulate: [sluice] --out must be');
      // Each scenario prints a line when it is done: none ran.
      expect(output).not.toContain('requests ×');
    }
    expect(await readFile(join(cwd, 'README.md'), 'utf8')).toBe('# My project\n');
  });
});

describe('pnpm simulate, typed anywhere in the repository', () => {
  /** The arguments the root `simulate` script gives main.ts, as pnpm's shell expands them in the workspace root. */
  async function scriptArguments(initCwd: string): Promise<string[]> {
    const { scripts } = JSON.parse(await readFile(join(root, 'package.json'), 'utf8'));
    // `tsx` prints what it is given, one argument a line, rather than run main.ts (which would write docs/simulations).
    const child = spawn('sh', ['-c', `tsx() { printf '%s\\n' "$@"; }; ${scripts.simulate}`], {
      cwd: root,
      // What the shell pnpm starts inherits: the directory the user typed the command in.
      env: { ...process.env, INIT_CWD: initCwd, PWD: initCwd },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    await new Promise((resolve) => child.once('exit', resolve));
    const words = output.trimEnd().split('\n');
    return words.slice(words.indexOf(join(root, 'packages/simulator/src/report/main.ts')) + 1);
  }

  // Regression: `pnpm -w simulate` typed in packages/simulator wrote packages/simulator/docs/simulations,
  // its `--out docs/simulations` taken from the directory typed in, as a user's own --out is.
  it("writes the repository's docs/simulations by default, and a user's relative --out where they typed it", async () => {
    const typedIn = join(root, 'packages', 'simulator');
    const args = await scriptArguments(typedIn);
    expect(parseCliOptions(args, typedIn)?.out).toBe(join(root, 'docs', 'simulations'));
    // pnpm adds the user's flags after the script's own, and the last --out is the one taken.
    expect(parseCliOptions([...args, '--out', 'sim'], typedIn)?.out).toBe(join(typedIn, 'sim'));
  });
});

describe('sluice-simulate, installed', () => {
  // npm and pnpm set INIT_CWD for every script, to where the command was typed: read first, it
  // sent `npm run sim --prefix proj` output to the parent's simulations/.
  it('takes a relative --trace from its working directory, whatever INIT_CWD says', async () => {
    const cwd = await mkdtemp(join(dir, 'project-'));
    const elsewhere = await mkdtemp(join(dir, 'typed-in-'));
    // A trace with a bad line fails at once, naming the file it read.
    await writeFile(join(cwd, 'trace.txt'), 'not a trace line\n');
    const { code, output } = await simulateCli(['--trace', 'trace.txt'], cwd, { INIT_CWD: elsewhere });
    expect(code).toBe(1);
    expect(output).toContain(join(cwd, 'trace.txt'));
    expect(output).not.toContain('ENOENT');
  });

  // `--out .` in a project wrote the page over the project's own README.md.
  it('refuses an --out holding a README.md it did not write, and writes over its own', async () => {
    const project = await mkdtemp(join(dir, 'readme-'));
    await writeFile(join(project, 'README.md'), '# My project\n');
    await expect(prepareOut(project)).rejects.toMatchObject({
      code: 'ERR_SLUICE_INVALID_OPTION',
      message: expect.stringContaining('holds a README.md that sluice-simulate did not write'),
    });
    expect(await readFile(join(project, 'README.md'), 'utf8')).toBe('# My project\n');
    const ours = await readFile(join(root, 'docs', 'simulations', 'README.md'), 'utf8');
    await writeFile(join(project, 'README.md'), ours);
    await expect(prepareOut(project)).resolves.toBeUndefined();
  });

  it('keeps the duration check of a --window with its unit', () => {
    expect(() => parseCliOptions(['--window', '99999999999d'], dir)).toThrow(
      expect.objectContaining({
        code: 'ERR_SLUICE_INVALID_DURATION',
        message: expect.not.stringContaining('with its unit'),
      }),
    );
  });

  it('asks a bare --window for its unit, rather than for milliseconds it cannot take', () => {
    expect(() => parseCliOptions(['--window', '1500'], dir)).toThrow(
      expect.objectContaining({
        code: 'ERR_SLUICE_INVALID_DURATION',
        message:
          '[sluice] --window must be a positive duration with its unit, such as 1m, 90s or 1500ms; received "1500".',
      }),
    );
  });

  // Regression: run with no flags in an app's directory, it wrote docs/simulations/ there, and
  // its help spoke of `pnpm simulate`, a script of sluice's own repository.
  it('writes to simulations/ in the current directory by default, and names itself in its help', () => {
    expect(parseCliOptions([], dir)?.out).toBe(join(dir, 'simulations'));
    expect(USAGE).toMatch(/^Usage: sluice-simulate /);
  });

  it('exits 2 on a bad flag, with the usage, having written nothing', async () => {
    const cwd = await mkdtemp(join(dir, 'flags-'));
    for (const args of [['--bogus'], ['--limit', '1.5']]) {
      const { code, output } = await simulateCli(args, cwd);
      expect(code).toBe(2);
      expect(output).toContain('Usage: sluice-simulate');
    }
    await expect(stat(join(cwd, 'simulations'))).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

describe('pnpm simulate --limit and --window', () => {
  // Regression: a policy core refuses passed the command line, ran every other scenario, then
  // failed the run (exit 1) naming `options.window`, an option the user never wrote.
  it('refuses a --limit per --window core refuses while reading the command line, naming the flags', () => {
    for (const [args, policy] of [
      [['--limit', '10000000', '--window', '1d'], '--limit 10000000 per --window 1d'],
      [['--limit', '9007199254740991'], '--limit 9007199254740991 per --window 1m'],
    ] as const) {
      expect(() => parseCliOptions(args, dir)).toThrow(
        expect.objectContaining({
          code: 'ERR_SLUICE_INVALID_WINDOW',
          message: expect.stringMatching(new RegExp(`^\\[sluice\\] ${policy} is not a policy core accepts: --window `)),
        }),
      );
    }
    // The largest limit a day allows is taken.
    expect(parseCliOptions(['--limit', String(Math.floor(2 ** 49 / 86_400_000)), '--window', '1d'], dir)).toBeDefined();
  });

  it('exits 2 with the usage on such a policy, before any scenario runs', async () => {
    const cwd = await mkdtemp(join(dir, 'policy-'));
    const { code, output } = await simulateCli(['--limit', '10000000', '--window', '1d'], cwd);
    expect(code).toBe(2);
    expect(output).toContain('--limit 10000000 per --window 1d is not a policy core accepts');
    expect(output).toContain('Usage: sluice-simulate');
    expect(output).not.toContain('requests ×');
    await expect(stat(join(cwd, 'simulations'))).rejects.toMatchObject({ code: 'ENOENT' });
  }, 60_000);
});

describe('pnpm simulate --trace', () => {
  it('fails on a missing or malformed trace before simulating anything (it ran every other scenario first)', async () => {
    const cwd = await mkdtemp(join(dir, 'trace-'));
    await writeFile(join(cwd, 'bad.log'), '1000 client\nyesterday client\n');
    const cases = [
      [
        'missing.log',
        "simulate: [sluice] --trace must be a file that can be read; ENOENT: no such file or directory, open '",
      ],
      ['bad.log', 'bad.log line 2: the timestamp must be whole epoch milliseconds'],
    ];
    for (const [trace, message] of cases) {
      const { code, output } = await simulateCli(['--trace', trace as string, '--out', 'sim'], cwd);
      expect(code).toBe(1);
      expect(output).toContain(message);
      expect(output).not.toContain('requests ×');
    }
    // Nothing written either: not even the output directory.
    await expect(stat(join(cwd, 'sim'))).rejects.toMatchObject({ code: 'ENOENT' });
  }, 60_000);
});
