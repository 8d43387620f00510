import type { HostSpeed } from './lib/host-speed.js';
import type { Disturbance } from './lib/job.js';
import type { Section } from './options.js';

export interface InprocResult extends Disturbance {
  contender: string;
  store: 'memory' | 'redis';
  keys: number;
  concurrency: number;
  mode: 'pass' | 'deny';
  /** The pair this run belongs to (see `Cell.pair`): its `opsPerSec` is then a shared core's. */
  pair?: number;
  opsPerSec?: number;
  opsPerCpuSec?: number;
  p50Us?: number;
  p99Us?: number;
  unexpected?: number;
  unavailable?: string;
  error?: string;
}

export interface HeapResult {
  contender: string;
  keys: number;
  heapBytesPerKey?: number;
  externalBytesPerKey?: number;
  rssBytesPerKey?: number;
  fillSeconds?: number;
  unavailable?: string;
  error?: string;
}

/** What a store keeps per tracked key: V8 heap and external memory (typed arrays) together. */
export const bytesPerKey = (h: HeapResult): number | undefined =>
  h.heapBytesPerKey === undefined || h.externalBytesPerKey === undefined
    ? undefined
    : h.heapBytesPerKey + h.externalBytesPerKey;

export interface HttpResult extends Disturbance {
  /** The cycle (1, 2, …; 0 for a contender that could not be measured). */
  round: number;
  /** The run's place in its framework's sequence: the runs either side are its neighbours. */
  seq: number;
  /**
   * Set on the two runs of a pair, the two sides of a target loaded at once on the one server
   * core; unique within the framework. Tables read the runs made alone, targets the pairs.
   */
  pair?: number;
  framework: string;
  variant: string;
  mode: 'pass' | 'deny';
  rps?: number;
  p50Ms?: number;
  p99Ms?: number;
  /** Share of responses with the expected status (200 on pass, 429 on deny). */
  expectedShare?: number;
  errors?: number;
  serverCores?: number;
  /** Responses per second of the server's CPU time (all its threads): what a pair's quotient reads. */
  rpsPerCpuSec?: number;
  clientCores?: number;
  redisCores?: number;
  unavailable?: string;
  error?: string;
}

export interface RedisBenchResult extends Disturbance {
  command: string;
  pipeline: number;
  /** Decisions per call: 1, or a batch (the ops/s counts calls). */
  decisions?: number;
  opsPerSec?: number;
  p50Ms?: number;
  p99Ms?: number;
  redisCores?: number;
  /** Redis's own time per call from `INFO commandstats` (absent in older runs): the median of the rounds'. */
  usecPerCall?: number;
  /** Each round's `usecPerCall`, in the order run (absent in older runs). */
  usecPerCallRuns?: number[];
  unavailable?: string;
  error?: string;
}

/** One load cell against `sluice serve` (one core) over one gRPC channel. */
export interface ServiceResult extends Disturbance {
  /** `control`: a gRPC server that answers OK without deciding, under the same load. */
  store: 'control' | 'memory' | 'redis';
  inFlight: number;
  callsPerSec?: number;
  p50Us?: number;
  p99Us?: number;
  /** Calls that failed or were not OK: none expected. */
  failed?: number;
  /** The service process's share of its core while loaded. */
  serviceCores?: number;
  rssMb?: number | undefined;
  error?: string;
}

/** A limiter over the Node service client next to one over an in-process Redis store. */
export interface ServiceClientCost {
  redis: { sequentialP50Us: number; sequentialPerSec: number; parallelPerSec: number };
  service: { sequentialP50Us: number; sequentialPerSec: number; parallelPerSec: number };
  /** A Fastify app with the sluice plugin over each, asked over HTTP one at a time and 50 at a time. */
  fastify?: { redis: FastifyCost; service: FastifyCost };
}

export interface FastifyCost {
  sequentialP50Us: number;
  sequentialP99Us: number;
  parallelPerSec: number;
}

export interface RunResults {
  startedAt: string;
  seconds: number;
  quick: boolean;
  /** The sections measured; absent in runs from before they were recorded. */
  sections?: readonly Section[];
  machine: { cpus: number; cpuModel: string; node: string; redis: string; kernel: string };
  /** The host's speed before the first section and after the last; absent in runs from before it was taken. */
  host?: { start: HostSpeed; end: HostSpeed };
  settings: Record<string, number>;
  inproc: InprocResult[];
  heap: HeapResult[];
  http: HttpResult[];
  redisBench: RedisBenchResult[];
  /** Absent in runs from before the decision service existed. */
  service?: ServiceResult[];
  serviceClientCost?: ServiceClientCost | undefined;
}
