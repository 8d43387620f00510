import { readdirSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

/** Kernel clock ticks per second for /proc accounting (USER_HZ; 100 on Linux). */
const HZ = 100;

/**
 * Busy ticks of the whole machine outside interrupts: user, nice, system and steal (the
 * hypervisor's other tenants). Interrupt time (irq, softirq) is left out: the kernel handles
 * the benchmark's own loopback traffic there and charges it to no process, a fifth of a core
 * while autocannon loads one Fastify server, which counted as foreign load flagged and re-ran
 * nearly every HTTP and Redis job (367 of a quick run's).
 */
function machineBusyTicks(): number {
  const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? '';
  const [user = 0, nice = 0, system = 0, , , , , steal = 0] = line.trim().split(/\s+/).slice(1).map(Number);
  return user + nice + system + steal;
}

/**
 * Ticks of this process plus those of its children already reaped (cutime, cstime): a
 * worker that has exited is gone from /proc, and its time shows up here instead. The fields of
 * /proc/self/stat after the command name: utime is field 14 of the line, index 11 here.
 */
function ownTicks(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return [11, 12, 13, 14].reduce((sum, i) => sum + Number(fields[i] ?? 0), 0);
}

/**
 * CPU time of one process, all its threads, in seconds, to the nanosecond: the sum of each
 * thread's run time from `/proc/<pid>/task/<tid>/schedstat`. The ticks of `/proc/<pid>/stat`
 * come 100 to the second, too coarse for half a core over one second. Undefined once it is gone.
 */
export function processCpuSeconds(pid: number): number | undefined {
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return undefined;
  }
  let ns = 0;
  for (const tid of tids) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ', 1)[0]);
    } catch {
      // A thread that ended since the listing: its time is gone with it.
    }
  }
  return ns / 1e9;
}

export interface CpuUse {
  seconds: number;
  /** Cores used by each watched process, by label. */
  cores: Record<string, number>;
  /** Cores used by everything else on the machine during the window. */
  foreign: number;
}

/**
 * Watches the CPU of the processes taking part in a measurement. Whatever else the machine
 * did in the same window is "foreign" load: a job that shared the cores with it is flagged
 * (and retried once) instead of silently reported.
 */
export function startCpuMeter(pids: Record<string, number | undefined>): () => CpuUse {
  const watched = Object.entries(pids).filter((e): e is [string, number] => e[1] !== undefined);
  const startedAt = performance.now();
  const machine0 = machineBusyTicks();
  const own0 = ownTicks();
  // Each watched process to the nanosecond: in ticks, an idle Redis beside a 0.5 s run read
  // 0 or 0.02 of a core, a tick or none.
  const cpu0 = watched.map(([, pid]) => processCpuSeconds(pid) ?? 0);
  return () => {
    const seconds = (performance.now() - startedAt) / 1000;
    const cores: Record<string, number> = {};
    const own = ownTicks() - own0;
    let ours = own / HZ;
    watched.forEach(([label, pid], i) => {
      const now = processCpuSeconds(pid);
      // An exited child is counted in `own`; one still running is read directly.
      const used = now === undefined ? 0 : now - (cpu0[i] as number);
      ours += used;
      cores[label] = used / seconds;
    });
    cores.bench = own / HZ / seconds;
    const foreign = Math.max(0, ((machineBusyTicks() - machine0) / HZ - ours) / seconds);
    return { seconds, cores, foreign };
  };
}

/** Foreign load above this, in cores, counts as a disturbed measurement. */
export const FOREIGN_LIMIT = 0.1;

/** The longest window `waitForQuiet` samples the machine's load over. */
const QUIET_SAMPLE_MS = 200;

/**
 * Waits (bounded) until the machine is quiet apart from our own long-lived processes,
 * sampling windows of a twentieth of the longest wait, at most 200 ms: the quick run, which
 * waits before every job and may wait 2 s, samples 100 ms. Returns the time waited and the
 * last foreign load seen.
 */
export async function waitForQuiet(
  ownPids: Record<string, number | undefined>,
  maxWaitMs: number,
): Promise<{ waitedMs: number; foreign: number }> {
  const start = performance.now();
  let foreign = 0;
  const sampleMs = Math.min(QUIET_SAMPLE_MS, maxWaitMs / 20);
  for (let i = 0; i < 100; i++) {
    const meter = startCpuMeter(ownPids);
    await sleep(sampleMs);
    foreign = meter().foreign;
    const waitedMs = performance.now() - start;
    if (foreign <= FOREIGN_LIMIT || waitedMs >= maxWaitMs) return { waitedMs: i === 0 ? 0 : waitedMs, foreign };
  }
  return { waitedMs: performance.now() - start, foreign };
}
