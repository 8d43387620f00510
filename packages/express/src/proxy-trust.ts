import { trustsStrangers } from '@sluice/core';
import type { Application } from 'express';

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

/** Whether Express, under the app's `trust proxy`, takes `address` at `hop` for a proxy and reads past it. */
export function expressTrustsAsProxy(app: Application, address: string, hop: number): boolean {
  return Boolean((app.get('trust proxy fn') as TrustFunction)(address, hop));
}
