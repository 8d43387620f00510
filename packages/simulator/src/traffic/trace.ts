import { readFile } from 'node:fs/promises';
import { checkOptionNames, describe, MAX_EPOCH_MS, SluiceError } from '@sluice/core';
import { type Arrival, DAY_MS } from './arrival.js';

export type TraceFormat = 'plain' | 'access-log';

export interface TraceOptions {
  /** @default detected from the first line that is not blank or a comment */
  format?: TraceFormat | undefined;
  /** Names the trace in error messages. @default 'trace' */
  source?: string | undefined;
}

/** A trace line that cannot be read: its 1-based `line` number is also in the message. */
export interface TraceError extends SluiceError {
  readonly line: number;
}

// host ident user [10/Oct/2000:13:55:36 -0700] "request" status bytes, then any quoted fields:
// "referer" "user-agent" in the combined format, and nginx's default `main` format adds
// "$http_x_forwarded_for".
const accessLogLine = /^(\S+) \S+ \S+ \[([^\]]+)\] "(?:[^"\\]|\\.)*" (?:\d{3}|-) (?:\d+|-)(?: "(?:[^"\\]|\\.)*")*\s*$/;
// Up to the quoted request: no plain line has a field in brackets followed by a quote, so a line
// that starts so is an access-log line, and its problem is reported as one.
const accessLogStart = /^\S+ \S+ \S+ \[[^\]]*\] "/;
const clfTime = /^(\d{2})\/([A-Z][a-z]{2})\/(\d{4}):(\d{2}):(\d{2}):(\d{2}) ([+-])(\d{2})(\d{2})$/;
/** The numbers of a `clfTime` match (all but the month's name and the zone's sign). */
type ClfFields = [
  day: number,
  year: number,
  hour: number,
  minute: number,
  second: number,
  zoneH: number,
  zoneM: number,
];
const months = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
// Any number of fraction digits: many logs write micro- or nanoseconds (ISO 8601 sets no limit).
const isoTime = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:Z|([+-])(\d{2}):(\d{2}))$/;
const wholeMs = /^\d{1,16}$/;
const positiveWhole = /^[1-9]\d{0,15}$/;

/**
 * Reads a recorded trace, so real logs can be replayed through every algorithm.
 *
 * - `plain`: one request per line, `timestamp key [cost]` separated by spaces or tabs. The
 *   timestamp is whole epoch milliseconds or ISO 8601 with a zone (`2026-11-24T10:00:00.250Z`),
 *   a real date (not 30 February, not 24:00) no earlier than 1970; fraction digits past the
 *   millisecond, simulated time's resolution, are dropped (`.123456Z` reads as `.123Z`). Cost
 *   is a positive whole number, 1 when left out. Blank lines and `#` comments are skipped.
 * - `access-log`: the Common or Combined Log Format of Apache and nginx, with any further quoted
 *   fields after them (nginx's default `main` format adds `"$http_x_forwarded_for"`). The key
 *   is the client host (first field), the cost 1; times have whole-second resolution.
 * - In both, a leap second (`23:59:60Z`) reads as the next day's first second, as epoch time
 *   counts it; a `:60` anywhere but at the end of a UTC day is refused.
 *
 * Requests are returned in time order (a log written as requests finish is slightly out of
 * order; ties keep file order). Any line that does not parse throws `ERR_SLUICE_INVALID_TRACE`
 * naming the line: nothing is skipped silently.
 */
export function parseTrace(text: string, options: TraceOptions = {}): Arrival[] {
  checkTraceOptions(options, ['format', 'source']);
  const { source = 'trace' } = options;
  if (typeof source !== 'string')
    throw invalidTrace(`Trace option \`source\` must be text; received ${describe(source)}.`);
  if (typeof text !== 'string')
    throw invalidTrace(`parseTrace takes the trace's text as a string; received ${describe(text)}.`);
  const lines = text.split(/\r?\n/);
  let format = options.format;
  const arrivals: Arrival[] = [];
  lines.forEach((raw, index) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    format ??= accessLogStart.test(line) ? 'access-log' : 'plain';
    const arrival = format === 'access-log' ? accessLogArrival(line) : plainArrival(line);
    if (typeof arrival === 'string') throw traceError(source, index + 1, raw, arrival);
    arrivals.push(arrival);
  });
  return arrivals.sort((a, b) => a.at - b.at);
}

/** `parseTrace` on a file; the file name appears in error messages. */
export async function readTrace(path: string, options: Omit<TraceOptions, 'source'> = {}): Promise<Arrival[]> {
  // Checked before the file is read, and `source` refused: spread below, it would be overwritten unseen.
  checkTraceOptions(options, ['format']);
  return parseTrace(await readFile(path, 'utf8'), { ...options, source: path });
}

const invalidTrace = (message: string) => new SluiceError('ERR_SLUICE_INVALID_TRACE', `[sluice] ${message}`);

/** Options that are an object naming only `known` ones, and a `format` this reader knows. */
function checkTraceOptions(options: unknown, known: readonly string[]): asserts options is TraceOptions {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw invalidTrace(`Trace options must be an object; received ${describe(options)}.`);
  }
  checkOptionNames(options, known, 'trace', invalidTrace);
  const { format } = options as TraceOptions;
  if (format !== undefined && format !== 'plain' && format !== 'access-log') {
    throw invalidTrace(`Trace option \`format\` must be 'plain' or 'access-log'; received ${describe(format)}.`);
  }
}

/** The arrival, or what is wrong with the line. */
function plainArrival(line: string): Arrival | string {
  if (accessLogStart.test(line)) return 'an access-log line in a plain trace (its first line decides the format)';
  const fields = line.split(/\s+/);
  if (fields.length < 2 || fields.length > 3) return 'expected "timestamp key [cost]"';
  const [time, key, cost] = fields as [string, string, string | undefined];
  const iso = isoTime.exec(time);
  let at: number | string;
  if (wholeMs.test(time)) at = Number(time);
  else if (iso !== null) at = isoMs(iso);
  else return 'the timestamp must be whole epoch milliseconds or ISO 8601 with a zone';
  if (typeof at === 'string') return at;
  if (!Number.isSafeInteger(at)) return 'the timestamp is not a valid time';
  if (at > MAX_EPOCH_MS) return "the timestamp is past 2^50 ms, the latest time a limiter's clock takes";
  // 16 digits pass the pattern, yet beyond 2^53 Number() rounds: 9999999999999999 reads as 10^16.
  if (cost !== undefined && (!positiveWhole.test(cost) || !Number.isSafeInteger(Number(cost))))
    return 'the cost must be a positive whole number up to Number.MAX_SAFE_INTEGER';
  return { at, key, cost: cost === undefined ? 1 : Number(cost) };
}

function accessLogArrival(line: string): Arrival | string {
  const match = accessLogLine.exec(line);
  if (match === null) {
    return 'expected a Common or Combined Log Format line: host ident user [time] "request" status bytes, then any "quoted" fields';
  }
  const time = clfTime.exec(match[2] as string);
  const month = months.indexOf(time?.[2] ?? '');
  if (time === null || month < 0) return 'the time must look like [10/Oct/2000:13:55:36 -0700]';
  const [day, year, hour, minute, second, zoneH, zoneM] = [1, 3, 4, 5, 6, 8, 9].map((i) =>
    Number(time[i]),
  ) as ClfFields;
  const leap = second === 60;
  const utc = utcMs(year, month, day, hour, minute, leap ? 59 : second);
  // Date rolls 31 Feb over into March; a log never means that.
  if (new Date(utc).getUTCDate() !== day || hour > 23 || minute > 59 || second > 60)
    return 'the time is not a valid date';
  const at = epochMs(zoned(utc, time[7] as string, zoneH, zoneM), leap);
  return typeof at === 'string' ? at : { at, key: match[1] as string, cost: 1 };
}

/** Epoch ms of an ISO 8601 match, or what is wrong with it. */
function isoMs(iso: RegExpExecArray): number | string {
  const fields = [1, 2, 3, 4, 5, 6].map((i) => Number(iso[i]));
  const leap = fields[5] === 60;
  if (leap) fields[5] = 59;
  const [year, month, day, hour, minute, second] = fields as [number, number, number, number, number, number];
  // Truncated, not rounded: .9999 rounded up would move the time into the next second.
  const date = new Date(
    utcMs(year, month - 1, day, hour, minute, second, Number((iso[7] ?? '').slice(0, 3).padEnd(3, '0'))),
  );
  // Date rolls 30 February over into March and 24:00 into the next day (Date.parse too): read
  // back, a rolled-over time differs from what the line says.
  const readBack = [
    date.getUTCFullYear(),
    date.getUTCMonth() + 1,
    date.getUTCDate(),
    date.getUTCHours(),
    date.getUTCMinutes(),
    date.getUTCSeconds(),
  ];
  if (readBack.some((value, i) => value !== fields[i])) return 'the time is not a valid date';
  return epochMs(
    iso[8] === undefined ? date.getTime() : zoned(date.getTime(), iso[8], Number(iso[9]), Number(iso[10])),
    leap,
  );
}

/**
 * A line's time in UTC, moved past its leap second, as epoch ms, or what is wrong with it.
 * Simulated time is epoch ms ≥ 0, as `simulate` requires: refused here, where the line is
 * known, and only once moved, as `1969-12-31T23:59:60Z` is the epoch itself.
 */
function epochMs(utc: number | string, leap: boolean): number | string {
  const at = leap ? afterLeapSecond(utc) : utc;
  if (typeof at === 'string') return at;
  return at < 0 ? 'the time is before 1970-01-01T00:00:00Z' : at;
}

/** Epoch ms of a UTC time, years 0–99 as written: `Date.UTC` reads them as 1900–1999. */
function utcMs(year: number, monthIndex: number, day: number, hour: number, minute: number, second: number, ms = 0) {
  const date = new Date(0);
  date.setUTCFullYear(year, monthIndex, day);
  date.setUTCHours(hour, minute, second, ms);
  return date.getTime();
}

/**
 * A leap second, read as its `:59` (`at`, in UTC, zone applied), as the same instant of the
 * second after it, as epoch time counts it (23:59:60.250Z as 00:00:00.250Z). One comes only
 * at the end of a UTC day (23:59:60Z, or 00:59:60+01:00): a `:60` elsewhere is refused, in
 * ISO 8601 and access-log times alike.
 */
function afterLeapSecond(at: number | string): number | string {
  if (typeof at === 'string') return at;
  const next = at + 1000;
  return (next - (next % 1000)) % DAY_MS === 0
    ? next
    : 'a leap second (:60) comes only at the end of a UTC day (23:59:60Z)';
}

/** A local time in a zone `sign` hours:minutes from UTC, as epoch ms, or what is wrong with the zone or time. */
function zoned(localMs: number, sign: string, hours: number, minutes: number): number | string {
  if (hours > 23 || minutes > 59) return 'the time zone offset is not a valid offset';
  const offsetMs = (hours * 60 + minutes) * 60_000;
  return sign === '-' ? localMs + offsetMs : localMs - offsetMs;
}

function traceError(source: string, line: number, raw: string, problem: string): TraceError {
  const shown = raw.length > 120 ? `${raw.slice(0, 117)}…` : raw;
  const error = new SluiceError(
    'ERR_SLUICE_INVALID_TRACE',
    `[sluice] ${source} line ${line}: ${problem}; received ${JSON.stringify(shown)}.`,
  );
  return Object.assign(error, { line });
}
