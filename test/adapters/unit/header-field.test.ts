import type { IncomingMessage } from 'node:http';
import { expect, it } from 'vitest';
import { compileDescriptors, type RequestFacts } from '../../../packages/core/src/http/rules/request-descriptors.js';

/** The `header.<name>` descriptor of a request Node parsed into these headers and raw lines. */
const read = (name: string, headers: Record<string, string>, rawHeaders: string[]) => {
  const request = { headers, rawHeaders } as unknown as IncomingMessage;
  const facts: RequestFacts = { request, url: '/', route: undefined, routeMethod: 'GET', remoteAddress: () => '' };
  const lists = compileDescriptors([[`header.${name}`]], undefined)(request, facts) as { value: string }[][];
  return lists[0]?.[0]?.value;
};

it.each([
  // Node joins a header sent twice: as a descriptor, a client picked its counter with each repeat.
  ['a header sent twice reads its first value', 'x-key', { 'x-key': 'K, junk' }, ['X-Key', 'K', 'x-key', 'junk'], 'K'],
  // What the app's own middleware set is read as set.
  ['a value the app set', 'x-user', { 'x-user': 'verified' }, ['x-user', 'a', 'x-user', 'b'], 'verified'],
  // HTTP/2 sends each cookie crumb on a line of its own: one header, read whole (the first crumb
  // alone put users whose cookies began alike on one counter).
  [
    'cookie, in crumbs',
    'cookie',
    { cookie: 'theme=dark; session=alice' },
    ['cookie', 'theme=dark', 'cookie', 'session=alice'],
    'theme=dark; session=alice',
  ],
] as const)('%s', (_, name, headers, raw, expected) => {
  expect(read(name, headers, [...raw])).toBe(expected);
});
