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

  const routePrefix = expect.stringMatching(/^route\.[\w-]{16}$/);

  it('replaces the policy options as a group and never inherits the prefix', () => {
    expect(mergeRouteOptions(app, { policies: [{ limit: 5, window: '1s' }] }, 'route')).toEqual({
      ipv6Subnet: 48,
      headers: { legacy: true },
      policies: [{ limit: 5, window: '1s' }],
      prefix: routePrefix,
    });
    expect(mergeRouteOptions(app, { limit: 5 }, 'route')).toEqual({
      ipv6Subnet: 48,
      headers: { legacy: true },
      limit: 5,
      prefix: routePrefix,
    });
  });

  it('gives each route a namespace of its own, the same in every process, unless the route names one', () => {
    const get = mergeRouteOptions(app, {}, 'config.rateLimit of GET /a').prefix;
    expect(get).toBe(mergeRouteOptions(app, {}, 'config.rateLimit of GET /a').prefix);
    expect(get).not.toBe(mergeRouteOptions(app, {}, 'config.rateLimit of GET /b').prefix);
    expect(mergeRouteOptions(app, { prefix: 'login' }, 'route').prefix).toBe('login');
  });

  it('reads an option given as undefined as left out', () => {
    const unset = { policies: undefined, key: undefined, onLimited: undefined, skipFailedRequests: undefined };
    expect(mergeRouteOptions(app, { ...unset, prefix: undefined }, 'route')).toEqual({ ...app, prefix: routePrefix });
  });

  it('inherits everything else, and lets key and ipv6Subnet replace each other', () => {
    const key = () => 'k';
    expect(mergeRouteOptions(app, {}, 'route')).toEqual({ ...app, prefix: routePrefix });
    expect(mergeRouteOptions({ ...app, key }, { ipv6Subnet: 64 }, 'route').key).toBeUndefined();
    expect(mergeRouteOptions(app, { key }, 'route').ipv6Subnet).toBeUndefined();
  });

  it('refuses a route config that is not an object', () => {
    expect(() => mergeRouteOptions(app, 5, 'config.rateLimit of GET /')).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_OPTION', message: expect.stringMatching(/GET \//) }),
    );
  });
});
