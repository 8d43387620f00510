import { type AddressInfo, connect, createServer, type Socket } from 'node:net';
import { median } from './stats.js';

/**
 * Three figures of the host itself, taken at the start and at the end of a run, so that two
 * runs' figures can be told apart from two hosts'. The same packages have read bare Koa at 31k
 * requests a second and, two and a half hours later, at 1.7k, and the memory store's 100k-key
 * loop at 2.4M and then 0.6M decisions a second. A shared VM's memory and kernel can slow
 * while its cores do not, and contenders lean on each to different degrees: each figure
 * watches one of the three.
 */
export interface HostSpeed {
  /** One iteration of a loop that touches no memory, in ns: the core's own speed. */
  registerLoopNs: number;
  /** One read of a chain of dependent reads spread over 64 MB, in ns: a cache miss to memory. */
  memoryReadNs: number;
  /** One message and its echo over a loopback TCP connection in this process, in µs: the kernel's path. */
  loopbackRoundTripUs: number;
}

const elapsedNs = (since: bigint): number => Number(process.hrtime.bigint() - since);

function registerLoopNs(): number {
  const iterations = 10_000_000;
  const start = process.hrtime.bigint();
  let x = 1;
  // An LCG: each step needs the last, so the loop cannot be folded away or run ahead.
  for (let i = 0; i < iterations; i++) x = (Math.imul(x, 1_103_515_245) + 12_345) | 0;
  const ns = elapsedNs(start) / iterations;
  if (x === 0.5) throw new Error('unreachable: keeps x alive');
  return ns;
}

/** Words per 64-byte cache line of a Uint32Array. */
const LINE_WORDS = 16;

/** The median of three takes of `reads` reads along one chain. */
function memoryReadNs(): number {
  const lines = (64 << 20) / 64;
  // One cycle through every line in a random order (Sattolo's shuffle), so that each read
  // depends on the last and no prefetcher guesses the next.
  const order = new Uint32Array(lines);
  for (let i = 0; i < lines; i++) order[i] = i;
  for (let i = lines - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * i);
    const swap = order[i] as number;
    order[i] = order[j] as number;
    order[j] = swap;
  }
  const chain = new Uint32Array(lines * LINE_WORDS);
  for (let i = 0; i < lines; i++) chain[i * LINE_WORDS] = (order[i] as number) * LINE_WORDS;
  const reads = 1_000_000;
  let at = 0;
  // Every line was written just now, so no page faults wait: this only warms the loop up.
  for (let i = 0; i < 100_000; i++) at = chain[at] as number;
  const takes = [0, 1, 2].map(() => {
    const start = process.hrtime.bigint();
    for (let i = 0; i < reads; i++) at = chain[at] as number;
    return elapsedNs(start) / reads;
  });
  if (at === 0.5) throw new Error('unreachable: keeps at alive');
  return median(takes);
}

async function loopbackRoundTripUs(): Promise<number> {
  const roundTrips = 2_000;
  const server = createServer((socket) => socket.pipe(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const client: Socket = connect(port, '127.0.0.1');
  client.setNoDelay(true);
  try {
    await new Promise<void>((resolve, reject) => client.once('connect', resolve).once('error', reject));
    const echoes = (count: number): Promise<number> =>
      new Promise((resolve, reject) => {
        let left = count;
        const start = process.hrtime.bigint();
        const onData = () => {
          left--;
          if (left > 0) client.write('x');
          else {
            client.off('data', onData);
            resolve(elapsedNs(start) / count / 1000);
          }
        };
        client.on('data', onData).once('error', reject);
        client.write('x');
      });
    await echoes(200);
    return await echoes(roundTrips);
  } finally {
    client.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

/** The three figures, each the median of three takes; under two seconds in all. */
export async function measureHostSpeed(): Promise<HostSpeed> {
  const loops = [registerLoopNs(), registerLoopNs(), registerLoopNs()];
  const memory = memoryReadNs();
  const roundTrips: number[] = [];
  for (let take = 0; take < 3; take++) roundTrips.push(await loopbackRoundTripUs());
  return { registerLoopNs: median(loops), memoryReadNs: memory, loopbackRoundTripUs: median(roundTrips) };
}

/** The figures in a line, as the run's progress and its report give them. */
export function describeHostSpeed(speed: HostSpeed): string {
  return [
    `a register loop's step ${speed.registerLoopNs.toFixed(2)} ns`,
    `a read from memory ${Math.round(speed.memoryReadNs)} ns`,
    `a loopback TCP round trip ${speed.loopbackRoundTripUs.toFixed(1)} µs`,
  ].join(', ');
}
