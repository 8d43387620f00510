import type { Application, Request } from 'express';

/** A layer of Express's router, as far as the pattern is read from it. */
interface RouterLayer {
  route?: unknown;
  handle?: { stack?: unknown };
  /** The path it was mounted or routed at, as written (Express 5's router 2.3 and later). */
  rawPath?: unknown;
  /** One match function per path it was given, flattened (Express 5). */
  matchers?: unknown;
}

type Matcher = (path: string) => false | { path: string };

/** Where a route sits in its app: its sub-app's mount, the routers above it, and its own layer. */
interface RoutePlace {
  /** The segments of the patterns its app was mounted at (`app.use('/v1', subApp)`), outermost first. */
  readonly appSegments: readonly string[];
  /** The routers' layers between the app and the route, outermost first, each mounted at one string. */
  readonly routers: readonly RouterLayer[];
  /** The patterns of the app's mounts and the routers', joined. */
  readonly mount: string;
  readonly layer: RouterLayer;
}

/** Each route's place, found once; `null` where none could be told for sure. */
const places = new WeakMap<object, RoutePlace | null>();

/** How many layers one search reads at most: a router mounted in itself would go on for ever. */
const MAX_LAYERS = 10_000;

/**
 * The pattern of the route Express matched (`/api/users/:id`), known in the route's own
 * middleware only. The route's own path is a pattern, but `req.baseUrl`, the part its routers
 * were mounted at, is the URL as sent: Express matches it regardless of case, so `/API/login`
 * reached a rule on `/api/login` under another key, and a mount path's parameter (`/tenants/:tid`)
 * came in as its value. The routers' patterns are read from the app's router tree instead, once
 * per route (Express 5 keeps each layer's path as written from its router 2.3 on), and each
 * request is checked to have come through them by the routers' own matchers. Where the tree
 * cannot tell (Express 4, a route reachable by several mounts, a mount path given as a list or
 * a RegExp, a sub-app mounted at one), the mount part is `req.baseUrl`, as before. A route given
 * several paths reports the one the request matched, where its place is known. Never throws.
 */
export function expressRoutePattern(req: Request): string | undefined {
  const route = req.route as { path?: unknown } | undefined;
  if (route === undefined || route === null) return undefined;
  try {
    const { baseUrl } = req;
    const place = baseUrl === '' && !Array.isArray(route.path) ? null : placeOf(req.app, route);
    const own = ownPath(route, place?.layer, req.path);
    if (own === undefined) return undefined;
    return (place !== null && cameThrough(place, baseUrl) ? place.mount : baseUrl) + own;
  } catch {
    return undefined;
  }
}

/** The route's own path: a string, or of a list the one `path` (the request's, below the mounts) matches. */
function ownPath(route: { path?: unknown }, layer: RouterLayer | undefined, path: string): string | undefined {
  if (typeof route.path === 'string') return route.path;
  if (!Array.isArray(route.path) || !Array.isArray(layer?.matchers)) return undefined;
  // The layer's matchers follow the list flattened, as Express flattens a nested one.
  const paths: unknown[] = route.path.flat(Number.POSITIVE_INFINITY);
  const index = (layer.matchers as Matcher[]).findIndex((match) => match(path) !== false);
  const own = paths[index];
  return typeof own === 'string' ? own : undefined;
}

/**
 * Whether the request came through `place`: `baseUrl` is its app's mount segments (each a
 * parameter or the same text), then what each router's own matcher takes, and nothing more.
 */
function cameThrough(place: RoutePlace, baseUrl: string): boolean {
  const segments = baseUrl.split('/');
  const appSegments = place.appSegments;
  for (let i = 1; i < appSegments.length; i++) {
    const pattern = appSegments[i] as string;
    if (!pattern.startsWith(':') && pattern.toLowerCase() !== segments[i]?.toLowerCase()) return false;
  }
  let rest = segments.length > appSegments.length ? `/${segments.slice(appSegments.length).join('/')}` : '';
  for (const router of place.routers) {
    const taken = ((router.matchers as Matcher[])[0] as Matcher)(rest);
    if (taken === false) return false;
    rest = rest.slice(taken.path.length);
  }
  return rest === '' || rest === '/';
}

function placeOf(app: Application, route: object): RoutePlace | null {
  let place = places.get(route);
  if (place === undefined) {
    place = findPlace(app, route);
    places.set(route, place);
  }
  return place;
}

/** The route's one place in `app`, or `null`. */
function findPlace(app: Application, route: object): RoutePlace | null {
  const appMount = mountOfApp(app);
  // Express 5's router; Express 4 keeps its own as `_router`, whose layers keep no pattern.
  const router = (app as unknown as { _router?: unknown })._router === undefined ? app.router : undefined;
  const stack: unknown = (router as { stack?: unknown } | undefined)?.stack;
  if (appMount === undefined || !Array.isArray(stack)) return null;
  const search: Search = { route, found: [], layers: 0, open: new Set() };
  walk(stack, [], search);
  if (search.layers > MAX_LAYERS || search.found.length !== 1) return null;
  const routers = search.found[0];
  const layer = search.ownLayer;
  if (!routers || layer === undefined) return null;
  const mount = appMount + routers.map((r) => trimmed(r.rawPath as string)).join('');
  return { appSegments: appMount.split('/'), routers, mount, layer };
}

interface Search {
  readonly route: object;
  /** Per place found, the routers above it; `null` for one under a mount not written as one string. */
  readonly found: (RouterLayer[] | null)[];
  layers: number;
  /** The routers being read, a router mounted in itself is not read again. */
  readonly open: Set<unknown>;
  ownLayer?: RouterLayer;
}

function walk(stack: unknown[], routers: RouterLayer[] | null, search: Search): void {
  if (search.open.has(stack)) return;
  search.open.add(stack);
  for (const layer of stack as RouterLayer[]) {
    if (++search.layers > MAX_LAYERS) break;
    if (layer?.route === search.route) {
      search.found.push(routers);
      search.ownLayer = layer;
    } else if (Array.isArray(layer?.handle?.stack)) {
      const known = routers !== null && typeof layer.rawPath === 'string' && Array.isArray(layer.matchers);
      walk(layer.handle.stack, known ? [...routers, layer] : null, search);
    }
  }
  search.open.delete(stack);
}

/** The patterns a sub-app was mounted at (`app.use('/v1', subApp)`), outermost first; `''` for the main app. */
function mountOfApp(app: Application): string | undefined {
  let mount = '';
  // `parent` is set on an app mounted in another (`app.use`), and missing from Express's types.
  type Mounted = { mountpath?: unknown; parent?: Mounted };
  for (let at = app as Mounted; at.parent !== undefined; at = at.parent) {
    // Checked segment by segment: only plain text and whole-segment parameters.
    if (typeof at.mountpath !== 'string' || /[*{}()?+]|[^/]:/.test(at.mountpath)) return undefined;
    mount = trimmed(at.mountpath) + mount;
  }
  return mount;
}

/** A mount path as it prefixes what is below it: `/` adds nothing, and a trailing slash is no segment. */
const trimmed = (path: string): string => path.replace(/\/+$/, '');
