import { spawn } from 'node:child_process';

const START_TIMEOUT_MS = 20_000;
/** Every fixture app allows 2 requests a minute per client, then refuses. */
const EXPECTED = [200, 200, 429];

/** Starts `node <file>` in `cwd`; resolves with the port it prints as `listening <port>`. */
function start(file: string, cwd: string): { port: Promise<number>; stop: () => void; output: () => string } {
  const child = spawn(process.execPath, [file], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const port = new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('did not start listening in time')), START_TIMEOUT_MS);
    const read = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening (\d+)/.exec(output);
      if (match !== null) {
        clearTimeout(timer);
        resolve(Number(match[1]));
      }
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with code ${code}`));
    });
  });
  return { port, stop: () => child.kill(), output: () => output };
}

/**
 * Runs one fixture app and sends it three requests over real HTTP: the first two must pass
 * and the third must get a 429 with `Retry-After`. Returns a problem, or undefined.
 */
export async function checkApp(label: string, file: string, cwd: string): Promise<string | undefined> {
  const app = start(file, cwd);
  try {
    const port = await app.port;
    const statuses: number[] = [];
    let retryAfter: string | null = null;
    for (let i = 0; i < EXPECTED.length; i++) {
      const response = await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(5000) });
      await response.arrayBuffer();
      statuses.push(response.status);
      retryAfter = response.headers.get('retry-after');
    }
    if (statuses.join() !== EXPECTED.join())
      return `${label}: statuses ${statuses.join(', ')}, expected ${EXPECTED.join(', ')}`;
    if (retryAfter === null) return `${label}: the 429 has no Retry-After`;
    return undefined;
  } catch (error) {
    return `${label}: ${(error as Error).message}\n${app.output()}`;
  } finally {
    app.stop();
  }
}
