import type { Application } from 'express';

/** Documentation addresses (RFC 5737, RFC 3849): no real proxy has one. */
const STRANGERS = ['203.0.113.9', '2001:db8::9'];
/** A hop no chain of proxies reaches: a hop count trusts fewer. */
const FAR_HOP = 1000;

type TrustFunction = (address: string, hop: number) => boolean;

/** Per app, the `trust proxy` setting last judged and whether it trusts every proxy. */
const judged = new WeakMap<Application, { setting: unknown; trustsAnyone: boolean }>();

/**
 * How far Express's `trust proxy` trusts: `true` trusts every proxy; a hop count some; a list
 * of addresses, a subnet or a function is judged by Express's compiled form, which trusts
 * every proxy when it trusts a documentation address however far along the chain it stands
 * (`() => true`, `'0.0.0.0/0'`, `'0.0.0.0/1,128.0.0.0/1'`): then any client picks its key with
 * X-Forwarded-For. Judged once per app and setting, not per request.
 */
export function expressProxyTrust(app: Application): 'none' | 'some' | 'all' {
  const setting: unknown = app.get('trust proxy');
  if (setting === true) return 'all';
  if (!setting) return 'none';
  if (typeof setting === 'number') return 'some';
  let verdict = judged.get(app);
  if (verdict?.setting !== setting) {
    verdict = { setting, trustsAnyone: trustsStrangers(app.get('trust proxy fn') as TrustFunction) };
    judged.set(app, verdict);
  }
  return verdict.trustsAnyone ? 'all' : 'some';
}

/** Whether `trusts` trusts a documentation address far along the chain; a function that throws on one is judged not to (a warning never breaks a request). */
function trustsStrangers(trusts: TrustFunction): boolean {
  try {
    // Read as Express reads it: any truthy answer trusts the hop.
    return STRANGERS.some((address) => Boolean(trusts(address, FAR_HOP)));
  } catch {
    return false;
  }
}
