import { describe, expect, it } from 'vitest';
import { rulePath } from '../../../packages/core/src/http/rules/request-descriptors.js';

describe('rulePath: the path a rule names, whatever the spelling', () => {
  it.each([
    ['/login', '/login'],
    ['/LOGIN', '/login'],
    ['/login/', '/login'],
    ['//login', '/login'],
    ['/%6Cogin', '/login'],
    // Kept as routers read them (`/api/..` is `/api/:id`): resolved, a `/api/*` rule was passed by.
    ['/a/./b/../login', '/a/./b/../login'],
    ['/api/%2e%2e', '/api/..'],
    ['/api/..%2F', '/api/..'],
    ['/login?next=/admin', '/login'],
    // As Express and Koa read them (`parseurl`, through `url.parse` for these): the path before a
    // `#`, each `\\` as `/`, an absolute-form target's path, `//user@host` as an authority.
    ['/login#x', '/login'],
    ['/login?next=#/admin', '/login'],
    ['/api\\login#', '/api/login'],
    ['http://h/api\\login', '/api/login'],
    ['https://h/API\\LOGIN\\?x', '/api/login'],
    ['//u@h/api/login#', '/api/login'],
    ['//u:p@h/API/LOGIN/?x#y', '/api/login'],
    ['/a\\..\\b\u00a0', '/a/../b'],
    // Read so by no router: `parseurl` splits such a target at its `?` alone.
    ['/api\\login', '/api\\login'],
    ['/api%2Fusers', '/api/users'],
    ['http://example.com/Login/?x=1', '/login'],
    ['/', '/'],
    ['', '/'],
    ['/%zz/login', '/%zz/login'],
    ['/caf%C3%A9', '/café'],
  ])('%j reads as %j', (url, path) => {
    expect(rulePath(url)).toBe(path);
  });
});
