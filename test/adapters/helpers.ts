import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Decision, Logger } from '@sluice/core';
import { type Item, parseList } from 'structured-headers';
import type { Response } from 'supertest';
import { manualClock } from '../helpers/clock.js';

/** Epoch ms at the start of a whole minute, so fixed windows line up with the test's arithmetic. */
export const MINUTE_START = 60_000 * 28_333_334;

export const clockAt = (offsetMs = 0) => manualClock(MINUTE_START + offsetMs);

export interface SfItem {
  name: string;
  params: Record<string, unknown>;
}

/** Parses a structured-field List strictly (RFC 9651); a malformed field fails the test. */
export function parseItems(field: string | undefined): SfItem[] {
  if (field === undefined) throw new Error('field missing');
  return parseList(field).map((member) => {
    const [value, params] = member as Item;
    if (typeof value !== 'string') throw new Error(`item ${String(value)} is not an sf-string`);
    return { name: value, params: Object.fromEntries(params) };
  });
}

/** The draft-11 fields of a response, by policy name, with every parameter an integer as the draft requires. */
export function draft11(res: Response): {
  policy: Record<string, SfItem['params']>;
  state: Record<string, SfItem['params']>;
} {
  const byName = (items: SfItem[]) => {
    for (const item of items) {
      for (const value of Object.values(item.params))
        if (!Number.isInteger(value)) throw new Error(`non-integer ${String(value)}`);
    }
    return Object.fromEntries(items.map((item) => [item.name, item.params]));
  };
  return {
    policy: byName(parseItems(res.headers['ratelimit-policy'])),
    state: byName(parseItems(res.headers.ratelimit)),
  };
}

export const decisionOf = (res: Response): Decision => (res.body as { decision: Decision }).decision;

/** Collects warnings instead of printing them. */
export function collectingLogger(): Logger & { messages: string[]; codes(): string[] } {
  const messages: string[] = [];
  return {
    messages,
    warn: (message) => messages.push(message),
    codes: () => messages.map((m) => /(WRN_SLUICE_\w+)/.exec(m)?.[1] ?? m),
  };
}

/** `server` listening on a free loopback port (the suite never opens one to the network), and how to close it. */
export async function onLoopback(server: Server): Promise<{ url: string; close(): Promise<void> }> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
