import type { Application, Request } from 'express';

/** A layer of Express's router, as far as the pattern is read from it. */
interface RouterLayer {
  route?: unknown;
  handle?: { stack?: unknown };
  /** The path it was mounted or routed at, as written (Express 5's router 2.3 and later). */
  rawPath?: unknown;
  /** One match function per path it was given, flattened (Express 5). */
  matchers?: unknown;
  /** Mounted at `/`: it takes every path and nothing of it. */
  slash?: unknown;
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

/** What is known of an app's routes: their places, as its router tree was last read. */
interface AppPlaces {
  places: Map<object, RoutePlace | null>;
  /** Routes not in the tree when it was read for them (reached through a function, say). */
  readonly missing: WeakSet<object>;
}

/** Each app's routes' places, read from its router tree once (again once a route is added). */
const placesIn = new WeakMap<object, AppPlaces>();

/**
 * How many layers one reading of a tree takes at most: a router mounted at many paths of
 * another mounted at many paths multiplies, and a tree so large is read no further.
 */
const MAX_LAYERS = 1_000_000;

/**
 * The pattern of the route Express matched (`/api/users/:id`), known in the route's own
 * middleware only. The route's own path is a pattern, but `req.baseUrl`, the part its routers
 * were mounted at, is the URL as sent: Express matches it regardless of case, so `/API/login`
 * reached a rule on `/api/login` under another key, and a mount path's parameter (`/tenants/:tid`)
 * came in as its value. The routers' patterns are read from the app's router tree instead, once
 * per app and again once a route is added (Express 5 keeps each layer's path as written from its
 * router 2.3 on), and each request is checked to have come through them by the routers' own
 * matchers. Where the tree cannot tell (Express 4, a route reachable by several mounts, a mount
 * path given as a list or a RegExp, a router reached through a function of the app's, a sub-app
 * mounted by a router or at more than plain text and whole-segment parameters), the mount part
 * is `req.baseUrl` in lower case, so that its case is no way around a rule either. A route given
 * several paths reports the one the request matched, where its place is known. Never throws.
 */
export function expressRoutePattern(req: Request): string | undefined {
  const route = req.route as { path?: unknown } | undefined;
  if (route === undefined || route === null) return undefined;
  try {
    const { baseUrl } = req;
    const place = placeOf(req.app, route);
    const own = ownPath(route, place?.layer, req.path);
    if (own === undefined) return undefined;
    // Where the tree cannot tell, the URL's mount part in one case: Express matches it in any.
    return (place !== null && cameThrough(place, baseUrl) ? place.mount : baseUrl.toLowerCase()) + own;
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
    // Mounted at `/`, a router takes nothing (Express matches it apart, as `slash`).
    if (router.slash === true) continue;
    const taken = ((router.matchers as Matcher[])[0] as Matcher)(rest);
    if (taken === false) return false;
    rest = rest.slice(taken.path.length);
  }
  return rest === '' || rest === '/';
}

function placeOf(app: Application, route: object): RoutePlace | null {
  let known = placesIn.get(app);
  if (known === undefined) {
    known = { places: readPlaces(app), missing: new WeakSet() };
    placesIn.set(app, known);
  }
  const place = known.places.get(route);
  if (place !== undefined) return place;
  if (known.missing.has(route)) return null;
  // A route added since the tree was read reads it again, once: one still not in it has no place.
  known.places = readPlaces(app);
  if (!known.places.has(route)) known.missing.add(route);
  return known.places.get(route) ?? null;
}

/** Every route's place in `app`'s router tree, `null` for one the tree cannot tell for sure. */
function readPlaces(app: Application): Map<object, RoutePlace | null> {
  const places = new Map<object, RoutePlace | null>();
  const appMount = mountOfApp(app);
  // Express 5's router; Express 4 keeps its own as `_router`, whose layers keep no pattern.
  const router = (app as unknown as { _router?: unknown })._router === undefined ? app.router : undefined;
  const stack: unknown = (router as { stack?: unknown } | undefined)?.stack;
  if (!Array.isArray(stack)) return places;
  const search = { layers: 0, open: new Set<unknown>() };
  const walk = (below: unknown[], routers: RouterLayer[] | null): void => {
    if (search.open.has(below)) return;
    search.open.add(below);
    for (const layer of below as RouterLayer[]) {
      if (++search.layers > MAX_LAYERS) break;
      const route = layer?.route;
      if (typeof route === 'object' && route !== null) {
        // A route reachable through two mounts: which one a request came by, the tree cannot say.
        const seen = places.has(route);
        places.set(
          route,
          seen || routers === null || appMount === undefined ? null : placeAt(appMount, routers, layer),
        );
      } else if (Array.isArray(layer?.handle?.stack)) {
        const known = routers !== null && typeof layer.rawPath === 'string' && Array.isArray(layer.matchers);
        walk(layer.handle.stack, known ? [...routers, layer] : null);
      }
    }
    search.open.delete(below);
  };
  walk(stack, []);
  // A tree too large to read whole: no place is sure.
  if (search.layers > MAX_LAYERS) for (const route of places.keys()) places.set(route, null);
  return places;
}

function placeAt(appMount: string, routers: RouterLayer[], layer: RouterLayer): RoutePlace {
  const mount = appMount + routers.map((r) => trimmed(r.rawPath as string)).join('');
  return { appSegments: appMount.split('/'), routers, mount, layer };
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

/** A route as Express keeps it: the methods it has handlers for, and its handlers' layers. */
interface RouteMethods {
  methods?: Record<string, boolean>;
  stack?: { method?: string; handle?: unknown }[];
}

/**
 * Whether a route answers a HEAD request with its GET handlers: it has no HEAD handler of its
 * own, or (`app.all` gives each method the same handlers) its HEAD handlers are its GET ones.
 */
export function expressHeadRunsGet(route: unknown): boolean {
  const { methods, stack } = (route ?? {}) as RouteMethods;
  if (methods === undefined) return false;
  if (methods.head !== true) return methods.get === true || methods._all === true;
  const handlers = (method: string) => (stack ?? []).filter((layer) => layer.method === method).map((l) => l.handle);
  const head = handlers('head');
  const get = handlers('get');
  return get.length > 0 && head.length === get.length && head.every((handle, i) => handle === get[i]);
}
