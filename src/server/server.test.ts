import { afterEach, describe, expect, it } from 'vitest';
import { METRIC, SitsMetrics, type SchedulerView } from './metrics.ts';
import { startServer, type SitsServer } from './server.ts';
import { parsePromText, sampleValue } from '../harness/prom-text.ts';
import { request } from 'node:https';
import { createCa, issue } from '../kube/secure/certs.ts';
import { clientCertAuthenticator } from '../kube/secure/delegated-auth.ts';

/** Two nodes of 8 and 4 GPUs; GPUs 0-2 of the first in use (one of them half), GPU 3 of the second unhealthy. */
function fakeScheduler(): SchedulerView & { leader: boolean } {
  const gpuFree = Int32Array.from([0, 500, 0, 1000, 1000, 1000, 1000, 1000]);
  const fake = {
    leader: true,
    stats: { cycles: 7, bound: 12, bindErrors: 1, failedAttempts: 3, gangsBound: 2, rollbacks: 1, recoveries: 0 },
    cache: {
      pending: { size: 5 },
      nodeCount: 2,
      state: () => ({
        nodes: [
          { gpuUsable: new Uint8Array(8).fill(1), gpuFree },
          { gpuUsable: Uint8Array.from([1, 1, 1, 0]), gpuFree: Int32Array.from([1000, 1000, 1000, 0]) },
        ],
      }),
    },
    isLeader: () => fake.leader,
    onAttempt: undefined,
  };
  return fake;
}

const get = async (url: string, method = 'GET'): Promise<{ status: number; type: string; body: string }> => {
  const r = await fetch(url, { method });
  return { status: r.status, type: r.headers.get('content-type') ?? '', body: await r.text() };
};

describe('the scheduler HTTP server', () => {
  let server: SitsServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('/healthz answers at once; /readyz waits for the scheduler and says leader or standby', async () => {
    server = await startServer({ port: 0, host: '127.0.0.1' });
    expect(await get(`${server.url}/healthz`)).toMatchObject({ status: 200, body: 'ok\n' });
    const before = await get(`${server.url}/readyz`);
    expect(before.status).toBe(503);
    expect(before.body).toContain('informers not synced');
    const s = fakeScheduler();
    server.attach(s);
    expect(await get(`${server.url}/readyz`)).toMatchObject({ status: 200, body: 'ok\ninformers: synced\nrole: leader\n' });
    s.leader = false;
    expect((await get(`${server.url}/readyz`)).body).toContain('role: standby');
    server.draining();
    expect((await get(`${server.url}/readyz`)).status).toBe(503);
    expect((await get(`${server.url}/healthz`)).status).toBe(200);
  });

  it('answers 404 for unknown paths, 405 for other methods, and HEAD without a body', async () => {
    server = await startServer({ port: 0, host: '127.0.0.1' });
    expect((await get(`${server.url}/nope`)).status).toBe(404);
    expect((await get(`${server.url}/metrics`, 'POST')).status).toBe(405);
    const head = await get(`${server.url}/metrics`, 'HEAD');
    expect(head).toMatchObject({ status: 200, body: '' });
  });

  it('/metrics is valid text format with every SITS metric, values read from the scheduler and client', async () => {
    const s = fakeScheduler();
    const metrics = new SitsMetrics({ version: 'v0.1.0 "dev"\\build\nline2', startTimeSeconds: 1_700_000_000.25 });
    server = await startServer({ port: 0, host: '127.0.0.1', metrics, scheduler: s, client: { stats: { requests: 1234, errors: 5 } } });
    // The scheduler reports attempts through the hook the server installed.
    for (const [sec, result] of [
      [0.0004, 'scheduled'],
      [0.003, 'scheduled'],
      [0.2, 'unschedulable'],
      [30, 'scheduled'],
    ] as const)
      s.onAttempt?.(sec, result);

    const r = await get(`${server.url}/metrics`);
    expect(r.status).toBe(200);
    expect(r.type).toBe('text/plain; version=0.0.4; charset=utf-8');
    const families = parsePromText(r.body); // strict: throws on any malformed line

    for (const name of Object.values(METRIC)) {
      const f = families.get(name);
      expect(f, name).toBeDefined();
      expect(f?.help, `${name} HELP`).toMatch(/\S/);
      expect(f?.type, `${name} TYPE`).not.toBe('untyped');
      expect(name).toMatch(/^sits_[a-z_]+$/);
      if (f?.type === 'counter') expect(name).toMatch(/_total$/);
      else expect(name).not.toMatch(/_total$/);
      if (name.includes('duration') || name.includes('time')) expect(name).toMatch(/_seconds$/);
    }
    expect([...families.keys()].filter((n) => !n.startsWith('sits_'))).toEqual([]);

    const v = (name: string, labels: Record<string, string> = {}): number | undefined => sampleValue(families, name, labels);
    expect(v(METRIC.attempts, { result: 'scheduled' })).toBe(3);
    expect(v(METRIC.attempts, { result: 'unschedulable' })).toBe(1);
    expect(v(METRIC.cycles)).toBe(7);
    expect(v(METRIC.bindings)).toBe(12);
    expect(v(METRIC.bindingErrors)).toBe(1);
    expect(v(METRIC.pendingPods)).toBe(5);
    expect(v(METRIC.gangsBound)).toBe(2);
    expect(v(METRIC.gangRollbacks)).toBe(1);
    expect(v(METRIC.leader)).toBe(1);
    expect(v(METRIC.apiRequests)).toBe(1234);
    expect(v(METRIC.apiErrors)).toBe(5);
    expect(v(METRIC.nodes)).toBe(2);
    expect(v(METRIC.gpus)).toBe(11);
    expect(v(METRIC.gpusAllocated)).toBe(3);
    expect(v(METRIC.startTime)).toBe(1_700_000_000.25);
    // Label escaping survives the round trip.
    expect(v(METRIC.buildInfo, { version: 'v0.1.0 "dev"\\build\nline2' })).toBe(1);
    expect(r.body).toContain('sits_build_info{version="v0.1.0 \\"dev\\"\\\\build\\nline2"} 1\n');

    // Histogram: buckets cumulative, +Inf = _count (the parser checks both), and the values where expected.
    expect(v(`${METRIC.attemptDuration}_bucket`, { result: 'scheduled', le: '0.0005' })).toBe(1);
    expect(v(`${METRIC.attemptDuration}_bucket`, { result: 'scheduled', le: '0.005' })).toBe(2);
    expect(v(`${METRIC.attemptDuration}_bucket`, { result: 'scheduled', le: '10' })).toBe(2);
    expect(v(`${METRIC.attemptDuration}_bucket`, { result: 'scheduled', le: '+Inf' })).toBe(3);
    expect(v(`${METRIC.attemptDuration}_count`, { result: 'scheduled' })).toBe(3);
    expect(v(`${METRIC.attemptDuration}_sum`, { result: 'scheduled' })).toBeCloseTo(30.0034, 6);
    expect(v(`${METRIC.attemptDuration}_count`, { result: 'unschedulable' })).toBe(1);

    s.leader = false;
    expect(sampleValue(parsePromText((await get(`${server.url}/metrics`)).body), METRIC.leader)).toBe(0);
  });

  it('serves zeros, still valid, before a scheduler is attached', async () => {
    server = await startServer({ port: 0, host: '127.0.0.1' });
    const families = parsePromText((await get(`${server.url}/metrics`)).body);
    expect(sampleValue(families, METRIC.bindings)).toBe(0);
    expect(sampleValue(families, `${METRIC.attemptDuration}_count`, { result: 'scheduled' })).toBe(0);
  });

  it('answers 500 and logs when the metrics cannot be read', async () => {
    const logs: string[] = [];
    const metrics = new SitsMetrics();
    metrics.attachSource(() => {
      throw new Error('cache gone');
    });
    server = await startServer({ port: 0, host: '127.0.0.1', metrics, log: (m) => logs.push(m) });
    expect(await get(`${server.url}/metrics`)).toMatchObject({ status: 500, body: 'metrics unavailable\n' });
    expect(logs).toEqual(['metrics: cache gone']);
    expect((await get(`${server.url}/healthz`)).status).toBe(200);
  });

  it('fails to start on a port in use, and closes cleanly', async () => {
    server = await startServer({ port: 0, host: '127.0.0.1' });
    await expect(startServer({ port: server.port, host: '127.0.0.1' })).rejects.toThrow(/EADDRINUSE/);
  });

  it('off loopback it is the secure port only: plain HTTP refused; TLS, probes open, /metrics for authorized callers', async () => {
    await expect(startServer({ port: 0, host: '0.0.0.0' })).rejects.toThrow(/refusing to serve plain HTTP on 0\.0\.0\.0/);
    const ca = await createCa('t', 3_600_000);
    const tls = await issue(ca, { commonName: 'localhost', dnsNames: ['localhost'], lifetimeMs: 3_600_000 });
    const prom = await issue(ca, { commonName: 'system:serviceaccount:monitoring:prometheus', usage: 'client', lifetimeMs: 3_600_000 });
    server = await startServer({
      port: 0,
      host: '0.0.0.0',
      secure: {
        tls,
        clientCa: ca.cert,
        authn: clientCertAuthenticator(),
        authz: { authorize: (c, a) => Promise.resolve({ allowed: c.user.endsWith(':prometheus') && a.path === '/metrics' && a.verb === 'get', reason: '' }) },
      },
    });
    expect(server.url).toMatch(/^https:/);
    const port = server.port;
    const call = (path: string, client?: { cert: string; key: string }): Promise<number> =>
      new Promise((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port, path, servername: 'localhost', ca: ca.cert, agent: false, ...(client ?? {}) }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on('error', reject);
        req.end();
      });
    expect(await call('/healthz')).toBe(200);
    expect(await call('/metrics')).toBe(403);
    expect(await call('/metrics', prom)).toBe(200);
  });
});
