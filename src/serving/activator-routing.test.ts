import { describe, expect, it } from 'vitest';
import { parseProxyPath, pickEndpoint, proxyVerb, readyEndpoints, type Endpoint, type EndpointSliceLike } from './activator-routing.ts';

describe('parseProxyPath', () => {
  it('names the service and the engine path, as the apiserver lays out services/proxy', () => {
    expect(parseProxyPath('/namespaces/team-a/inferenceservices/llama/proxy/v1/completions')).toEqual({
      ok: true,
      target: { namespace: 'team-a', name: 'llama', rest: '/v1/completions' },
    });
    expect(parseProxyPath('/namespaces/a/inferenceservices/m.v2/proxy')).toEqual({ ok: true, target: { namespace: 'a', name: 'm.v2', rest: '/' } });
  });
  it('refuses other paths, bad names and dot segments with the reason', () => {
    expect(parseProxyPath('/v1/completions')).toMatchObject({ ok: false, message: expect.stringMatching(/not an inference path: \/v1\/completions/) });
    expect(parseProxyPath('/namespaces/A/inferenceservices/x/proxy/v1')).toMatchObject({ ok: false, message: expect.stringMatching(/invalid namespace "A"/) });
    expect(parseProxyPath('/namespaces/a/inferenceservices/-x/proxy/v1')).toMatchObject({
      ok: false,
      message: expect.stringMatching(/invalid InferenceService name "-x"/),
    });
    expect(parseProxyPath('/namespaces/a/inferenceservices/x/proxy/v1/../../metrics')).toMatchObject({
      ok: false,
      message: expect.stringMatching(/dot segments/),
    });
    expect(parseProxyPath('/namespaces/a/inferenceservices/x/proxyv1')).toMatchObject({ ok: false });
  });
});

describe('proxyVerb', () => {
  it("maps HTTP methods to RBAC verbs as the apiserver's RequestInfo does", () => {
    expect(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'].map(proxyVerb)).toEqual(['get', 'get', 'create', 'update', 'patch', 'delete', 'get']);
    expect(proxyVerb('post')).toBe('create');
  });
});

describe('readyEndpoints', () => {
  const slice = (ports: NonNullable<EndpointSliceLike['ports']>, endpoints: NonNullable<EndpointSliceLike['endpoints']>): EndpointSliceLike => ({
    ports,
    endpoints,
  });
  it('keeps ready and unknown-readiness endpoints on the named port, sorted', () => {
    const s = [
      slice(
        [
          { name: 'metrics', port: 9000 },
          { name: 'http', port: 8000 },
        ],
        [
          { addresses: ['10.0.0.2'], conditions: { ready: true }, targetRef: { name: 'b' } },
          { addresses: ['10.0.0.1'], targetRef: { name: 'a' } },
          { addresses: ['10.0.0.3'], conditions: { ready: false }, targetRef: { name: 'c' } },
        ],
      ),
      // A slice without the named port serves nothing on it.
      slice([{ name: 'grpc', port: 8001 }], [{ addresses: ['10.0.0.9'], targetRef: { name: 'z' } }]),
    ];
    expect(readyEndpoints(s, 'http', (ip) => `x-${ip}`)).toEqual([
      { name: 'a', host: 'x-10.0.0.1', port: 8000 },
      { name: 'b', host: 'x-10.0.0.2', port: 8000 },
    ]);
    expect(readyEndpoints(s).map((e) => `${e.name}:${e.port}`)).toEqual(['a:9000', 'b:9000', 'z:8001']);
  });
});

describe('pickEndpoint', () => {
  const eps: Endpoint[] = ['a', 'b', 'c'].map((name, i) => ({ name, host: `10.0.0.${i}`, port: 80 }));
  it('sends to the fewest requests in flight, round robin among equals', () => {
    const load = new Map<string, number>();
    const picks: string[] = [];
    for (let turn = 0; turn < 6; turn++) picks.push(pickEndpoint(eps, (e) => load.get(e.name) ?? 0, turn)?.name ?? '');
    expect(picks).toEqual(['a', 'b', 'c', 'a', 'b', 'c']);
    load.set('a', 2).set('b', 0).set('c', 1);
    expect(pickEndpoint(eps, (e) => load.get(e.name) ?? 0, 0)?.name).toBe('b');
    expect(pickEndpoint([], () => 0, 0)).toBeUndefined();
  });
});
