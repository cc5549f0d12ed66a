/**
 * The activator's routing decisions (ADR 0149), pure: which InferenceService a request names, which verb RBAC
 * checks, which of the service's ready endpoints takes it. The I/O (the server, the EndpointSlice watch, holding
 * requests while a service scales from zero) is live/activator/activator.ts.
 *
 * URL layout: `/namespaces/{namespace}/inferenceservices/{name}/proxy/{rest}` — the apiserver's own proxy
 * subresource layout (`services/proxy`), so RBAC grants callers `inferenceservices/proxy` as it grants
 * `services/proxy`, and an OpenAI client's base URL is `…/inferenceservices/{name}/proxy/v1`.
 */

export interface Endpoint {
  /** The pod (EndpointSlice targetRef) or any label. */
  readonly name: string;
  readonly host: string;
  readonly port: number;
}

/** The fields of a discovery.k8s.io/v1 EndpointSlice the routing reads. */
export interface EndpointSliceLike {
  readonly metadata?: { readonly namespace?: string; readonly labels?: Readonly<Record<string, string>> };
  readonly endpoints?: readonly {
    readonly addresses: readonly string[];
    readonly conditions?: { readonly ready?: boolean };
    readonly targetRef?: { readonly name?: string };
  }[];
  readonly ports?: readonly { readonly name?: string; readonly port?: number }[];
}

/** The label the EndpointSlice controller puts on every slice of a Service. */
export const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';

/**
 * The ready endpoints of a Service's slices, by port name (or the first port when none is named), sorted by pod name then address.
 * An endpoint without conditions.ready counts as ready (the EndpointSlice API's rule, and kube-proxy's).
 * `resolve` maps a pod IP to the address to dial (identity in a cluster; the dev pod network in tests).
 */
export function readyEndpoints(slices: Iterable<EndpointSliceLike>, portName?: string, resolve: (ip: string) => string = (ip) => ip): Endpoint[] {
  const out: Endpoint[] = [];
  for (const s of slices) {
    const port = (portName === undefined ? s.ports?.[0] : s.ports?.find((p) => p.name === portName))?.port;
    if (port === undefined) continue;
    for (const e of s.endpoints ?? []) {
      if (e.conditions?.ready === false) continue;
      for (const ip of e.addresses) out.push({ name: e.targetRef?.name ?? ip, host: resolve(ip), port });
    }
  }
  return out.sort((a, b) => a.name.localeCompare(b.name) || a.host.localeCompare(b.host));
}

export interface ProxyTarget {
  readonly namespace: string;
  readonly name: string;
  /** The path sent to the engine, with a leading slash (`/v1/completions`); `/` when the URL ends at `proxy`. */
  readonly rest: string;
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const PROXY = /^\/namespaces\/([^/]+)\/inferenceservices\/([^/]+)\/proxy(\/.*)?$/;

/** The service a request path names, or why the path names none (the message is the 404's body). */
export function parseProxyPath(path: string): { readonly ok: true; readonly target: ProxyTarget } | { readonly ok: false; readonly message: string } {
  const m = PROXY.exec(path);
  if (m === null) return { ok: false, message: `not an inference path: ${path} (expected /namespaces/{namespace}/inferenceservices/{name}/proxy/{path})` };
  const [, namespace = '', name = '', rest = '/'] = m;
  if (namespace.length > 63 || !DNS_LABEL.test(namespace)) return { ok: false, message: `invalid namespace ${JSON.stringify(namespace)} in ${path}` };
  if (name.length > 253 || !/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(name))
    return { ok: false, message: `invalid InferenceService name ${JSON.stringify(name)} in ${path}` };
  // A dot segment would let a caller authorized for one service reach another path on the engine's host.
  if (rest.split('/').some((seg) => seg === '..' || seg === '.')) return { ok: false, message: `dot segments are not allowed in ${path}` };
  return { ok: true, target: { namespace, name, rest } };
}

/** The RBAC verb of an HTTP method on a proxy subresource (the apiserver's RequestInfo mapping). */
export function proxyVerb(method: string): string {
  switch (method.toUpperCase()) {
    case 'POST':
      return 'create';
    case 'PUT':
      return 'update';
    case 'PATCH':
      return 'patch';
    case 'DELETE':
      return 'delete';
    default:
      return 'get';
  }
}

/**
 * The endpoint for the next request: the fewest requests in flight through this activator, ties broken by a
 * rotating start (round robin among equals), so a burst spreads evenly and a slow replica gets less.
 */
export function pickEndpoint(endpoints: readonly Endpoint[], inFlight: (e: Endpoint) => number, turn: number): Endpoint | undefined {
  if (endpoints.length === 0) return undefined;
  let best: Endpoint | undefined;
  let bestLoad = Infinity;
  for (let i = 0; i < endpoints.length; i++) {
    const e = endpoints[(turn + i) % endpoints.length] as Endpoint;
    const load = inFlight(e);
    if (load < bestLoad) {
      best = e;
      bestLoad = load;
    }
  }
  return best;
}

/** Request headers not passed to the engine: hop-by-hop ones (RFC 9110 §7.6.1) and the caller's credentials. */
export const DROPPED_REQUEST_HEADERS = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'host',
  'authorization',
  'proxy-authorization',
]);
/** Response headers not passed back: hop-by-hop ones. */
export const DROPPED_RESPONSE_HEADERS = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade']);
