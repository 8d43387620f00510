import type { Application, Request } from 'express';

/** A layer of Express's router, as far as the pattern is read from it. */
interface RouterLayer {
  route?: unknown;
  handle?: { stack?: unknown };
  /** The path it was mounted or routed at, as written (Express 5's router 2.3 and later). */
  rawPath?: unknown;
  /** One match function per path it was given (Express 5). */
  matchers?: unknown;
}

/** Where a route sits in its app: the patterns of the routers above it, and its own layer. */
interface RoutePlace {
  readonly mount: string;
  readonly layer: RouterLayer;
}

/** Each route's place, found once; `null` where none could be told for sure. */
const places = new WeakMap<object, RoutePlace | null>();

/** How deep routers are read into one another: a router mounted in itself loops. */
const MAX_DEPTH = 32;

/**
 * The pattern of the route Express matched (`/api/users/:id`), known in the route's own
 * middleware only. The route's own path is a pattern, but `req.baseUrl`, the part its routers
 * were mounted at, is the URL as sent: Express matches it regardless of case, so `/API/login`
 * reached a rule on `/api/login` under another key, and a mount path's parameter (`/tenants/:tid`)
 * came in as its value. The routers' patterns are read from the app's router tree instead, once
 * per route (Express 5, router 2.3 and later, keep each layer's path as written). Where they
 * cannot be told for sure (an older router, a route mounted at several paths, a mount path given
 * as a list or a RegExp), the mount part is `req.baseUrl`, as before. A route given several
 * paths reports the one the request matched.
 */
export function expressRoutePattern(req: Request): string | undefined {
  const route = req.route as { path?: unknown } | undefined;
  if (route === undefined || route === null) return undefined;
  const { baseUrl } = req;
  const place = baseUrl === '' && !Array.isArray(route.path) ? null : placeOf(req.app, route);
  const own = ownPath(route, place?.layer, req.path);
  if (own === undefined) return undefined;
  return (place !== null && fits(place.mount, baseUrl) ? place.mount : baseUrl) + own;
}

/**
 * Whether the routers' patterns read from the tree are those the request went through: as many
 * segments as `req.baseUrl`, each a parameter or the same text. (A sub-app a router mounts is
 * mounted at a path the tree does not show.) A pattern whose parts may span segments is taken.
 */
function fits(mount: string, baseUrl: string): boolean {
  if (/[*{}()?+]/.test(mount)) return true;
  const patterns = mount.split('/');
  const segments = baseUrl.split('/');
  return (
    patterns.length === segments.length &&
    patterns.every((part, i) => part.startsWith(':') || part.toLowerCase() === segments[i]?.toLowerCase())
  );
}

/** The route's own path: a string, or of a list the one `path` (the request's, below the mounts) matches. */
function ownPath(route: { path?: unknown }, layer: RouterLayer | undefined, path: string): string | undefined {
  if (typeof route.path === 'string') return route.path;
  if (!Array.isArray(route.path) || !Array.isArray(layer?.matchers)) return undefined;
  const index = (layer.matchers as unknown[]).findIndex(
    (match) => typeof match === 'function' && match(path) !== false,
  );
  const own: unknown = route.path[index];
  return typeof own === 'string' ? own : undefined;
}

function placeOf(app: Application, route: object): RoutePlace | null {
  let place = places.get(route);
  if (place === undefined) {
    place = findPlace(app, route);
    places.set(route, place);
  }
  return place;
}

/** The route's one place in `app` (a sub-app below the apps it is mounted in), or `null`. */
function findPlace(app: Application, route: object): RoutePlace | null {
  const appMount = mountOfApp(app);
  const stack = (app as unknown as { router?: { stack?: unknown } }).router?.stack;
  if (appMount === undefined || !Array.isArray(stack)) return null;
  const found: (RoutePlace | null)[] = [];
  walk(stack, route, appMount, found, 0);
  return found.length === 1 ? (found[0] as RoutePlace | null) : null;
}

/** Every place of `route` below `stack`, `null` for one under a mount path not written as one string. */
function walk(stack: unknown[], route: object, mount: string | null, found: (RoutePlace | null)[], depth: number) {
  for (const layer of stack as RouterLayer[]) {
    if (layer?.route === route) found.push(mount === null ? null : { mount, layer });
    else if (Array.isArray(layer?.handle?.stack) && depth < MAX_DEPTH) {
      const below = mount === null || typeof layer.rawPath !== 'string' ? null : mount + trimmed(layer.rawPath);
      walk(layer.handle.stack, route, below, found, depth + 1);
    }
  }
}

/** The patterns a sub-app was mounted at (`app.use('/v1', subApp)`), outermost first; `''` for the main app. */
function mountOfApp(app: Application): string | undefined {
  let mount = '';
  // `parent` is set on an app mounted in another (`app.use`), and missing from Express's types.
  type Mounted = { mountpath?: unknown; parent?: Mounted };
  for (let at = app as Mounted; at.parent !== undefined; at = at.parent) {
    if (typeof at.mountpath !== 'string') return undefined;
    mount = trimmed(at.mountpath) + mount;
  }
  return mount;
}

/** A mount path as it prefixes what is below it: `/` adds nothing, and a trailing slash is no segment. */
const trimmed = (path: string): string => path.replace(/\/+$/, '');
