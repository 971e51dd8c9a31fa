// The route table of the front: URL → route, the Allow header and the metrics
// template of each route, and the request context every handler receives
// (copied out of uWS's stack-allocated HttpRequest before any async step).
import { PATH_TO_TYPE, TYPE_CODE, type ResourceType } from '../api/resources.js';
import { ROUTE } from '../metrics.js';
import { opsAllow, opsMetricRoute, parseOpsRoute, type OpsRoute } from './ops.js';
import { ALLOW_DETAIL, ALLOW_INDEX, ALLOW_LIST, type Exchange } from './respond.js';
import { ALLOW_STREAM } from './stream.js';

export type Route =
  | { kind: 'index' } | { kind: 'root' } | OpsRoute
  /** nothing there; `detail`: a resource's detail path with an id that cannot be one (its 404 gives that path's methods) */
  | { kind: 'missing'; detail?: true }
  | { kind: 'ingest' } | { kind: 'stream' }
  | { kind: 'list'; type: ResourceType }
  /** ARA's latesthosts: the list (name null), or one host name's newest row */
  | { kind: 'latest'; name: string | null }
  | { kind: 'detail'; type: ResourceType; id: number }
  /** a run as JUnit XML, for CI (docs/api.md#junit-xml) */
  | { kind: 'junit'; playbook: number }
  /** a run's results by shown status (docs/api.md#run-totals) */
  | { kind: 'totals'; playbook: number }
  /** the webhook endpoints (name null), or one endpoint's delivery log (docs/webhooks.md#the-api) */
  | { kind: 'webhooks'; name: string | null }
  /** full-text search over every type (docs/search.md) */
  | { kind: 'search' };

/** Everything a request needs after its handler returns (uWS's HttpRequest dies then). */
export interface Req extends Exchange {
  url: string;
  query: string;
  host: string;
  forwardedProto: string;
  forwardedHost: string;
  contentType: string;
  contentEncoding: string;
  minimal: boolean;
  route: Route;
  /** live stream (SSE): Accept and Last-Event-ID; null on other routes */
  stream: { accept: string; lastEventId: string; authorization: string; address: string } | null;
  /** called when the client goes away (a live stream unsubscribes) */
  onAbort: (() => void) | null;
}

const ID = /^[1-9]\d{0,15}$/;
const JUNIT = /^([1-9]\d{0,15})\/junit\.xml$/;
const TOTALS = /^([1-9]\d{0,15})\/totals$/;
const WEBHOOK_DELIVERIES = /^webhooks\/([A-Za-z0-9_.-]{1,64})\/deliveries$/;
const ALLOW_INGEST = 'POST, OPTIONS';

/** URL segment → type as a Map: one lookup, and no prototype keys ('constructor') to guard against. */
const TYPE_BY_PATH = new Map<string, ResourceType>(Object.entries(PATH_TO_TYPE));

export function parseRoute(url: string): Route {
  const path = url.length > 1 && url.endsWith('/') ? url.slice(0, -1) : url;
  if (path === '/api') return { kind: 'index' };
  if (path === '/api/v1') return { kind: 'root' };
  const ops = parseOpsRoute(path);
  if (ops) return ops;
  if (!path.startsWith('/api/v1/')) return { kind: 'missing' };
  if (path === '/api/v1/ingest') return { kind: 'ingest' };
  if (path === '/api/v1/stream') return { kind: 'stream' };
  const rest = path.slice(8);
  if (rest === 'webhooks') return { kind: 'webhooks', name: null };
  if (rest === 'search') return { kind: 'search' };
  const hook = WEBHOOK_DELIVERIES.exec(rest);
  if (hook !== null) return { kind: 'webhooks', name: hook[1]! };
  if (rest === 'latesthosts') return { kind: 'latest', name: null };
  if (rest.startsWith('latesthosts/')) {
    // a host name, percent-decoded (it may hold any character but a slash)
    let name: string;
    try { name = decodeURIComponent(rest.slice(12)); } catch { return { kind: 'missing' }; }
    return name === '' || name.includes('/') ? { kind: 'missing' } : { kind: 'latest', name };
  }
  const slash = rest.indexOf('/');
  const type = TYPE_BY_PATH.get(slash < 0 ? rest : rest.slice(0, slash));
  if (type === undefined) return { kind: 'missing' };
  if (slash < 0) return { kind: 'list', type };
  const idText = rest.slice(slash + 1);
  const id = ID.test(idText) ? Number(idText) : NaN;
  if (Number.isSafeInteger(id)) return { kind: 'detail', type, id };
  const junit = type === 'playbook' ? JUNIT.exec(idText) : null;
  if (junit !== null) return { kind: 'junit', playbook: Number(junit[1]) };
  const totals = type === 'playbook' ? TOTALS.exec(idText) : null;
  if (totals !== null) return { kind: 'totals', playbook: Number(totals[1]) };
  // an id that cannot be one (abc, 0, 1e3, too large): still the detail path, whose methods its 404 gives
  return idText.includes('/') ? { kind: 'missing' } : { kind: 'missing', detail: true };
}

export function allowOf(route: Route): string {
  switch (route.kind) {
    case 'list': return ALLOW_LIST;
    case 'detail': return ALLOW_DETAIL;
    case 'missing': return route.detail ? ALLOW_DETAIL : '';
    case 'ingest': return ALLOW_INGEST;
    case 'stream': return ALLOW_STREAM;
    case 'junit': case 'totals': return ALLOW_INDEX;
    case 'webhooks': case 'search': return ALLOW_INDEX;
    case 'ops': return opsAllow(route);
    default: return ALLOW_INDEX; // index, root, latest: reads only
  }
}

/** The route template index of a route, for metrics (metrics.ts ROUTE). */
export function metricRoute(route: Route): number {
  switch (route.kind) {
    case 'index': return ROUTE.index;
    case 'root': return ROUTE.root;
    case 'missing': return ROUTE.missing;
    case 'ingest': return ROUTE.ingest;
    case 'stream': return ROUTE.stream;
    case 'junit': return ROUTE.junit;
    case 'totals': return ROUTE.totals;
    case 'search': return ROUTE.search;
    case 'webhooks': return route.name === null ? ROUTE.webhooks : ROUTE.webhookDeliveries;
    case 'latest': return route.name === null ? ROUTE.latest : ROUTE.latestDetail;
    case 'list': return ROUTE.list + TYPE_CODE[route.type];
    case 'detail': return ROUTE.detail + TYPE_CODE[route.type];
    case 'ops': return opsMetricRoute(route);
  }
}

/** The body of an OPTIONS answer (DRF's metadata shape). */
export function optionsBody(name: string): string {
  return JSON.stringify({ name, renders: ['application/json'], parses: ['application/json'] });
}
