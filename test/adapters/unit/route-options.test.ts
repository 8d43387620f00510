import { mergeRouteOptions } from '@sluice/core';
import { describe, expect, it } from 'vitest';

describe('mergeRouteOptions', () => {
  const app = {
    limit: 100,
    window: '1m',
    algorithm: 'gcra',
    prefix: 'site',
    ipv6Subnet: 48,
    headers: { legacy: true },
  };

  it('replaces the policy options as a group and never inherits the prefix', () => {
    expect(mergeRouteOptions(app, { policies: [{ limit: 5, window: '1s' }] }, 'route')).toEqual({
      ipv6Subnet: 48,
      headers: { legacy: true },
      policies: [{ limit: 5, window: '1s' }],
    });
    expect(mergeRouteOptions(app, { limit: 5 }, 'route')).toEqual({
      ipv6Subnet: 48,
      headers: { legacy: true },
      limit: 5,
    });
  });

  it('inherits everything else, and lets key and ipv6Subnet replace each other', () => {
    const key = () => 'k';
    expect(mergeRouteOptions(app, {}, 'route')).toEqual({ ...app, prefix: undefined });
    expect(mergeRouteOptions({ ...app, key }, { ipv6Subnet: 64 }, 'route').key).toBeUndefined();
    expect(mergeRouteOptions(app, { key }, 'route').ipv6Subnet).toBeUndefined();
  });

  it('refuses a route config that is not an object', () => {
    expect(() => mergeRouteOptions(app, 5, 'config.rateLimit of GET /')).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_OPTION', message: expect.stringMatching(/GET \//) }),
    );
  });
});
