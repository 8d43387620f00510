import { describe, expect, it } from 'vitest';
import { limitFunctionPolicies } from '../../../packages/core/src/http/limit-function.js';

describe('limit as a function of the request and key', () => {
  it('maps each distinct limit to one policy list object, so a repeated result is an identity hit', async () => {
    const seen: [unknown, string][] = [];
    const policiesFor = limitFunctionPolicies<{ plan: string }>({
      limit: (req: { plan: string }, key: string) => {
        seen.push([req, key]);
        return req.plan === 'pro' ? 100 : 10;
      },
      window: '1m',
      algorithm: 'gcra',
    });
    const free = await policiesFor({ plan: 'free' }, 'a');
    expect(free).toEqual([{ limit: 10, window: '1m', algorithm: 'gcra' }]);
    expect(await policiesFor({ plan: 'free' }, 'b')).toBe(free);
    const pro = await policiesFor({ plan: 'pro' }, 'c');
    expect(pro).not.toBe(free);
    expect(pro).toEqual([{ limit: 100, window: '1m', algorithm: 'gcra' }]);
    expect(seen.map(([, key]) => key)).toEqual(['a', 'b', 'c']);
  });

  it('takes an async function too', async () => {
    const policiesFor = limitFunctionPolicies({ limit: async () => 7, window: 1000 });
    expect(await policiesFor({}, 'k')).toBe(await policiesFor({}, 'k'));
  });

  it('checks the fixed options at once', () => {
    expect(() => limitFunctionPolicies({ limit: () => 1, window: '1m', algorithm: 'nope' })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_UNKNOWN_ALGORITHM' }),
    );
  });

  it('rejects a request whose limit is not a positive whole number, naming the function', async () => {
    const policiesFor = limitFunctionPolicies({
      limit: (_req: unknown, key: string) => (key === 'bad' ? 0.5 : 3),
      window: '1m',
    });
    expect(() => policiesFor({}, 'bad')).toThrow(
      expect.objectContaining({
        code: 'ERR_SLUICE_INVALID_LIMIT',
        message: expect.stringMatching(/`limit` function returned 0\.5/),
      }),
    );
    expect(await policiesFor({}, 'good')).toEqual([{ limit: 3, window: '1m' }]);
  });
});
