import { afterEach, describe, expect, it } from 'vitest';
import { FakeApiServer, type FakeApiServerOptions, type FakeObject, type FakeRequest } from '../../harness/fake-apiserver.ts';
import { waitFor } from '../../harness/e2e-kit.ts';
import { KubeApiError, KubeClient } from './client.ts';
import { Reflector } from './reflector.ts';

const CMS = '/api/v1/namespaces/ns/configmaps';
const cm = (name: string, v = '1'): FakeObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { v } });

interface Seen {
  readonly log: string[];
  readonly errors: Error[];
  synced: number;
}

let fake: FakeApiServer | undefined;
let client: KubeClient | undefined;
let reflector: Reflector<FakeObject> | undefined;

afterEach(async () => {
  reflector?.stop();
  client?.close();
  await fake?.close();
  reflector = undefined;
  client = undefined;
  fake = undefined;
});

async function setup(opts: FakeApiServerOptions = {}, seed: string[] = []): Promise<{ fake: FakeApiServer; r: Reflector<FakeObject>; seen: Seen }> {
  const f = (fake = await FakeApiServer.start(opts));
  for (const n of seed) f.create(CMS, cm(n));
  client = new KubeClient(f.kubeConfig());
  const seen: Seen = { log: [], errors: [], synced: 0 };
  const r = (reflector = new Reflector<FakeObject>(client, CMS, {
    add: (o) => seen.log.push(`add ${o.metadata.name}`),
    update: (o, old) =>
      seen.log.push(`update ${o.metadata.name} ${String((old as { data?: { v?: string } }).data?.v)}→${String((o as { data?: { v?: string } }).data?.v)}`),
    delete: (o) => seen.log.push(`delete ${o.metadata.name}`),
    synced: () => seen.synced++,
    error: (e) => seen.errors.push(e),
  }));
  return { fake: f, r, seen };
}

const watches = (f: FakeApiServer): FakeRequest[] => f.requestsWhere({ watch: true, path: CMS });
const gapsMs = (rs: readonly FakeRequest[]): number[] => rs.slice(1).map((r, i) => r.atMs - (rs[i] as FakeRequest).atMs);
/** Node may fire a timer up to a millisecond early; the server stamps arrival a little after the send. */
const SLACK_MS = 5;

describe('Reflector against a fake apiserver', () => {
  it('lists page by page (limit + continue), then watches from the list resourceVersion', async () => {
    const { fake: f, r, seen } = await setup({ maxPageSize: 2 }, ['a', 'b', 'c', 'd', 'e']);
    const listRv = f.resourceVersion;
    await r.start();
    expect(seen.log).toEqual(['add a', 'add b', 'add c', 'add d', 'add e']);
    expect(seen.synced).toBe(1);
    expect([...r.items.keys()]).toEqual(['ns/a', 'ns/b', 'ns/c', 'ns/d', 'ns/e']);
    const lists = f.requestsWhere({ method: 'GET', watch: false, path: CMS });
    expect(lists).toHaveLength(3);
    expect(lists.map((l) => l.query.get('limit'))).toEqual(['2000', '2000', '2000']);
    expect(lists[0]?.query.has('continue')).toBe(false);
    expect(lists[1]?.query.get('continue')).not.toBeNull();
    await waitFor('the watch', async () => watches(f).length === 1);
    expect(watches(f)[0]?.query.get('resourceVersion')).toBe(listRv);
  });

  it('turns watch events into add, update and delete', async () => {
    const { fake: f, r, seen } = await setup({}, ['a']);
    await r.start();
    await waitFor('the watch to open', async () => f.openWatches === 1);
    f.create(CMS, cm('b'));
    f.update(`${CMS}/a`, (o) => ({ ...o, data: { v: '2' } }));
    f.delete(`${CMS}/b`);
    await waitFor('three events', async () => seen.log.length === 4);
    expect(seen.log).toEqual(['add a', 'add b', 'update a 1→2', 'delete b']);
    expect([...r.items.keys()]).toEqual(['ns/a']);
    expect(r.relists).toBe(1);
  });

  it('after a clean close resumes the watch at once from the last resourceVersion, without relisting', async () => {
    const { fake: f, r, seen } = await setup({}, ['a']);
    await r.start();
    await waitFor('the watch to open', async () => f.openWatches === 1);
    f.create(CMS, cm('b'));
    await waitFor('add b', async () => seen.log.includes('add b'));
    const lastRv = f.resourceVersion;
    f.closeWatches();
    await waitFor('a second watch', async () => watches(f).length === 2 && f.openWatches === 1);
    expect(watches(f)[1]?.query.get('resourceVersion')).toBe(lastRv);
    f.create(CMS, cm('c'));
    await waitFor('add c', async () => seen.log.includes('add c'));
    expect(seen.log).toEqual(['add a', 'add b', 'add c']);
    expect(r.relists).toBe(1);
    expect(seen.errors).toEqual([]);
    // A bookmark moves the resume point without an event.
    f.bookmark();
    const bookmarkRv = f.resourceVersion;
    f.update(`${CMS}/a`, (o) => o);
    await waitFor('update a', async () => seen.log.length === 4);
    f.closeWatches();
    await waitFor('a third watch', async () => watches(f).length === 3);
    expect(Number(watches(f)[2]?.query.get('resourceVersion'))).toBeGreaterThan(Number(bookmarkRv));
  });

  for (const goneAs of ['event', 'status'] as const) {
    it(`on 410 Gone (${goneAs === 'event' ? 'an ERROR event' : 'an HTTP 410'}) relists and synthesises a delete for an object that vanished`, async () => {
      const { fake: f, r, seen } = await setup({ goneAs }, ['a', 'b']);
      await r.start();
      await waitFor('the watch to open', async () => f.openWatches === 1);
      // Hold the next watch while the world moves on and the history is compacted.
      let release!: () => void;
      const gate = new Promise<void>((res) => (release = res));
      const stopHolding = f.intercept(async (req) => {
        if (req.watch) await gate;
        return false;
      });
      f.closeWatches();
      await waitFor('the resumed watch to arrive', async () => watches(f).length === 2);
      f.delete(`${CMS}/a`);
      f.update(`${CMS}/b`, (o) => ({ ...o, data: { v: '2' } }));
      f.create(CMS, cm('c'));
      f.compact();
      stopHolding();
      release();
      await waitFor('the relist', async () => r.relists === 2 && seen.synced === 2);
      expect(seen.log).toEqual(['add a', 'add b', 'delete a', 'update b 1→2', 'add c']);
      expect([...r.items.keys()].sort()).toEqual(['ns/b', 'ns/c']);
      expect(seen.errors).toHaveLength(1);
      expect(seen.errors[0]).toBeInstanceOf(KubeApiError);
      expect((seen.errors[0] as KubeApiError).status).toBe(410);
      // And watches again from the relist's resourceVersion.
      const relistRv = f.resourceVersion;
      await waitFor('a watch after the relist', async () => f.openWatches === 1);
      expect(watches(f).at(-1)?.query.get('resourceVersion')).toBe(relistRv);
      f.delete(`${CMS}/c`);
      await waitFor('delete c', async () => seen.log.at(-1) === 'delete c');
    });
  }

  it('backs off after errors: 0.5 s, then 1 s, then resumes', async () => {
    const { fake: f, r, seen } = await setup({}, ['a']);
    let failures = 0;
    f.intercept((req, res) => {
      if (!req.watch || failures >= 2) return false;
      failures++;
      res.writeHead(500, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ kind: 'Status', status: 'Failure', reason: 'InternalError', message: 'etcd is sulking', code: 500 }));
      return true;
    });
    await r.start();
    await waitFor('the third watch to open', async () => f.openWatches === 1, 30_000, 20);
    const ws = watches(f);
    expect(ws).toHaveLength(3);
    const [g1, g2] = gapsMs(ws);
    expect(g1).toBeGreaterThanOrEqual(500 - SLACK_MS);
    expect(g2).toBeGreaterThanOrEqual(1000 - SLACK_MS);
    expect(seen.errors.map((e) => (e as KubeApiError).status)).toEqual([500, 500]);
    expect(seen.errors[0]?.message).toContain('etcd is sulking');
    f.create(CMS, cm('b'));
    await waitFor('add b', async () => seen.log.includes('add b'));
    expect(r.relists).toBe(1);
  });

  it('backs off when watches close at once without events, instead of spinning', async () => {
    const { fake: f, r } = await setup({}, ['a']);
    // A server (or proxy) that accepts each watch and closes it straight away.
    f.intercept((req, res) => {
      if (!req.watch) return false;
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end();
      return true;
    });
    await r.start();
    await waitFor('three watches', async () => watches(f).length >= 3, 30_000, 20);
    const [g1, g2] = gapsMs(watches(f));
    expect(g1).toBeGreaterThanOrEqual(500 - SLACK_MS);
    expect(g2).toBeGreaterThanOrEqual(1000 - SLACK_MS);
  });

  it('starts over from the shortest backoff once a watch works again', async () => {
    const { fake: f, r, seen } = await setup({}, ['a']);
    let failures = 0;
    const failing = f.intercept((req) => {
      if (!req.watch || failures >= 3) return false;
      failures++;
      return Promise.reject(new Error('boom'));
    });
    await r.start();
    await waitFor('the fourth watch to open', async () => f.openWatches === 1, 30_000, 20);
    failing();
    f.create(CMS, cm('b'));
    await waitFor('add b', async () => seen.log.includes('add b'));
    // The connection drops: the next attempt waits the shortest backoff (0.5 s), not the 4 s the errors had reached.
    const brokeAt = performance.now();
    f.breakWatches();
    await waitFor('a fifth watch', async () => watches(f).length === 5, 30_000, 20);
    const gap = (watches(f)[4] as FakeRequest).atMs - brokeAt;
    expect(gap).toBeGreaterThanOrEqual(500 - SLACK_MS);
    // Any bound below the old 4 s tells the two apart; the widest leaves the most room for a busy machine.
    expect(gap).toBeLessThan(3900);
    expect(seen.errors).toHaveLength(4);
    expect(r.relists).toBe(1);
  });

  it('stops: no more watches after stop()', async () => {
    const { fake: f, r } = await setup({}, ['a']);
    await r.start();
    await waitFor('the watch to open', async () => f.openWatches === 1);
    r.stop();
    await waitFor('the server to see the watch closed', async () => f.openWatches === 0);
    expect(watches(f)).toHaveLength(1);
  });
});
