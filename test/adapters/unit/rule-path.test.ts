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
    // Routed by the path before a `#`, and Express and Koa (`parseurl`) read `\` as `/` there.
    ['/login#x', '/login'],
    ['/login?next=#/admin', '/login'],
    ['/api\\login#', '/api/login'],
    ['/a\\..\\b\u00a0', '/a/../b\u00a0'],
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
