import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeApiServer, type FakeObject } from '../../harness/fake-apiserver.ts';
import { waitFor } from '../../harness/e2e-kit.ts';
import { KubeClient } from '../client/client.ts';
import { LeaderElector, type LeaderOptions, microTime } from './leader.ts';

const LEASES = '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases';
const LEASE = `${LEASES}/sits`;

interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}
const spec = (o: FakeObject | undefined): LeaseSpec => (o?.spec ?? {}) as LeaseSpec;

let fake: FakeApiServer;
const clients: KubeClient[] = [];
const electors: LeaderElector[] = [];

beforeEach(async () => {
  fake = await FakeApiServer.start();
});
afterEach(async () => {
  await Promise.all(electors.splice(0).map((e) => e.stop(false)));
  for (const c of clients.splice(0)) c.close();
  await fake.close();
});

interface Probe {
  readonly elector: LeaderElector;
  started: number;
  stopped: number;
}

/** An elector with its own client (its own connection, as another replica would have). Short timings: lease 1 s. */
function elector(identity: string, o: Partial<LeaderOptions> = {}): Probe {
  const client = new KubeClient(fake.kubeConfig(), { userAgent: identity });
  clients.push(client);
  const p: Probe = { elector: undefined as unknown as LeaderElector, started: 0, stopped: 0 };
  const e = new LeaderElector(client, {
    namespace: 'kube-system',
    name: 'sits',
    identity,
    leaseDurationSec: 1,
    renewDeadlineSec: 0.6,
    retryPeriodSec: 0.1,
    onStartedLeading: () => p.started++,
    onStoppedLeading: () => p.stopped++,
    ...o,
  });
  electors.push(e);
  (p as { elector: LeaderElector }).elector = e;
  return p;
}

const byAgent = (identity: string, method?: string): number =>
  fake.requests.filter((r) => r.headers['user-agent'] === identity && (method === undefined || r.method === method)).length;

describe('LeaderElector against a fake apiserver', () => {
  it('microTime has microseconds, as MicroTime requires', () => {
    expect(microTime(new Date('2026-12-01T09:00:00.123Z'))).toBe('2026-12-01T09:00:00.123000Z');
  });

  it('acquires a free Lease (creating it) and keeps renewing it', async () => {
    const a = elector('a');
    a.elector.start();
    await waitFor('a to lead', async () => a.elector.isLeader(), 30_000, 10);
    expect(a.started).toBe(1);
    const first = fake.get(LEASE);
    expect(spec(first)).toMatchObject({ holderIdentity: 'a', leaseDurationSeconds: 1, leaseTransitions: 0 });
    expect(spec(first).renewTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    const rv = Number(first?.metadata.resourceVersion);
    await waitFor('two renewals', async () => Number(fake.get(LEASE)?.metadata.resourceVersion) >= rv + 2, 30_000, 10);
    const later = spec(fake.get(LEASE));
    expect(later.holderIdentity).toBe('a');
    expect(later.acquireTime).toBe(spec(first).acquireTime);
    expect(later.renewTime! > spec(first).renewTime!).toBe(true);
    expect(byAgent('a', 'PUT')).toBeGreaterThanOrEqual(2);
    expect(a.elector.isLeader()).toBe(true);
    expect(a.stopped).toBe(0);
  });

  it('a second elector waits while the first renews, and takes over once the lease expires', async () => {
    // A 2 s lease renewed every 0.1 s: a busy machine would have to stall a's renewals for 2 s to hand b the lease.
    const timings = { leaseDurationSec: 2, renewDeadlineSec: 1.5 };
    const a = elector('a', timings);
    a.elector.start();
    await waitFor('a to lead', async () => a.elector.isLeader(), 30_000, 10);
    const b = elector('b', timings);
    b.elector.start();
    // b looks at the lease many times (for longer than a lease duration) and never takes it while a renews.
    await waitFor('b to have looked 25 times', async () => byAgent('b', 'GET') >= 25, 30_000, 10);
    expect(b.elector.isLeader()).toBe(false);
    expect(b.started).toBe(0);
    expect(byAgent('b', 'PUT') + byAgent('b', 'POST')).toBe(0);
    expect(spec(fake.get(LEASE)).holderIdentity).toBe('a');

    // a stops renewing (a crash: no release). b takes over, but not before a lease duration has passed.
    await a.elector.stop(false);
    const lastRenew = fake.requests.filter((r) => r.headers['user-agent'] === 'a' && r.method === 'PUT').at(-1)?.atMs ?? 0;
    await waitFor('b to lead', async () => b.elector.isLeader(), 30_000, 10);
    const takeover = fake.requests.filter((r) => r.headers['user-agent'] === 'b' && r.method === 'PUT')[0];
    expect((takeover?.atMs ?? 0) - lastRenew).toBeGreaterThanOrEqual(2000);
    expect(spec(fake.get(LEASE))).toMatchObject({ holderIdentity: 'b', leaseTransitions: 1 });
    expect(b.started).toBe(1);
    expect(a.elector.isLeader()).toBe(false);
    expect(a.stopped).toBe(1);
  });

  it('stop(true) releases the lease so a standby takes over at once', async () => {
    // A long lease: without the release b would wait 30 s.
    const a = elector('a', { leaseDurationSec: 30, renewDeadlineSec: 20 });
    a.elector.start();
    await waitFor('a to lead', async () => a.elector.isLeader(), 30_000, 10);
    const b = elector('b', { leaseDurationSec: 30, renewDeadlineSec: 20 });
    b.elector.start();
    await waitFor('b to have looked', async () => byAgent('b', 'GET') >= 2, 30_000, 10);
    await a.elector.stop(true);
    expect(a.stopped).toBe(1);
    expect(spec(fake.get(LEASE)).holderIdentity ?? '').not.toBe('a');
    await waitFor('b to lead', async () => b.elector.isLeader(), 10_000, 10);
    expect(spec(fake.get(LEASE))).toMatchObject({ holderIdentity: 'b', leaseTransitions: 1 });
  });

  it('gives up leadership when renewals fail past the renew deadline', async () => {
    const a = elector('a');
    a.elector.start();
    await waitFor('a to lead', async () => a.elector.isLeader(), 30_000, 10);
    let failedAt = 0;
    fake.intercept((r, res) => {
      if (r.method !== 'PUT') return false;
      failedAt ||= r.atMs;
      res.writeHead(500, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ kind: 'Status', status: 'Failure', reason: 'InternalError', message: 'etcd timeout', code: 500 }));
      return true;
    });
    await waitFor('a to step down', async () => a.stopped === 1, 30_000, 10);
    expect(a.elector.isLeader()).toBe(false);
    // Not at the first failure: only once no renew has succeeded for the renew deadline (0.6 s).
    expect(byAgent('a', 'PUT')).toBeGreaterThan(1);
    expect(performance.now() - failedAt).toBeGreaterThan(400);
  });

  it('stop() while the first acquire is in flight neither leads afterwards nor leaves the lease held', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let answered = false;
    fake.intercept(async (r, res) => {
      if (r.method !== 'POST') return false;
      await gate;
      res.once('finish', () => (answered = true));
      return false;
    });
    const a = elector('a', { leaseDurationSec: 30, renewDeadlineSec: 20 });
    a.elector.start();
    await waitFor('the create to reach the server', async () => byAgent('a', 'POST') === 1, 30_000, 10);
    const stopping = a.elector.stop(true);
    release();
    await stopping;
    await waitFor('the create to be answered', async () => answered, 30_000, 10);
    await waitFor('the client to be idle', async () => fake.inFlight === 0, 30_000, 10);
    expect(a.started).toBe(0);
    expect(a.elector.isLeader()).toBe(false);
    expect(spec(fake.get(LEASE)).holderIdentity ?? '').not.toBe('a');
  });
});
