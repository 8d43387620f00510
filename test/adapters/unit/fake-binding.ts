import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AdapterBinding } from '@sluice/core';

/** A request as the unit tests make it: an address and headers, plus whatever a test adds. */
export interface FakeRequest {
  ip: string | undefined;
  headers: Record<string, string>;
}

/** A framework binding over plain objects: headers are written into the response object. */
export function fakeBinding<Req extends FakeRequest>(): AdapterBinding<Req, Record<string, string>> {
  return {
    rawRequest: (req) => req as unknown as IncomingMessage,
    requestUrl: (req) => (req as { url?: string }).url,
    // Reads back the fields set, as Node's response reads its own (by any case of the name).
    rawResponse: (res) =>
      ({
        getHeader: (name: string) => Object.entries(res).find(([set]) => set.toLowerCase() === name.toLowerCase())?.[1],
      }) as unknown as ServerResponse,
    clientIp: (req) => req.ip,
    proxyTrust: () => 'none',
    trustAdvice: 'trust your proxy.',
    setHeader: (res, name, value) => {
      res[name] = value;
    },
    appendHeader: (res, name, value) => {
      res[name] = value;
    },
  };
}
