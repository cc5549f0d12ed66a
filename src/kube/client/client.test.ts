import { CoreV1Api } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeApiServer } from '../../harness/fake-apiserver.ts';
import { waitFor } from '../../harness/e2e-kit.ts';
import { isStatus, KubeApiError, KubeClient, warningTexts, type WatchEvent } from './client.ts';

const PODS = '/api/v1/namespaces/ns/pods';
const pod = (name: string, extra: Record<string, unknown> = {}): { metadata: { name: string }; [k: string]: unknown } => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name },
  ...extra,
});

let fake: FakeApiServer;
let client: KubeClient;

beforeEach(async () => {
  fake = await FakeApiServer.start();
});
afterEach(async () => {
  client?.close();
  await fake.close();
});

describe('KubeClient against a fake apiserver', () => {
  it('sends and reads JSON bodies: post, put, merge patch, get, delete', async () => {
    client = new KubeClient(fake.kubeConfig());
    const created = await client.post<{ metadata: { name: string; uid: string; resourceVersion: string } }>(PODS, pod('a', { spec: { nodeName: '' } }));
    expect(created.metadata.name).toBe('a');
    expect(created.metadata.uid).not.toBe('');
    const post = fake.requestsWhere({ method: 'POST' })[0];
    expect(post?.headers['content-type']).toBe('application/json');
    expect(post?.body).toEqual(pod('a', { spec: { nodeName: '' } }));

    const patched = await client.mergePatch<{ spec: { nodeName: string }; metadata: { labels: Record<string, string> } }>(`${PODS}/a`, {
      spec: { nodeName: 'n1' },
      metadata: { labels: { x: '1' } },
    });
    expect(patched.spec.nodeName).toBe('n1');
    expect(patched.metadata.labels).toEqual({ x: '1' });
    expect(fake.requestsWhere({ method: 'PATCH' })[0]?.headers['content-type']).toBe('application/merge-patch+json');

    const got = await client.get<{ metadata: { resourceVersion: string; name: string } }>(`${PODS}/a`);
    const put = await client.put<{ metadata: { resourceVersion: string }; spec: unknown }>(`${PODS}/a`, { ...got, spec: { nodeName: 'n2' } });
    expect(put.spec).toEqual({ nodeName: 'n2' });
    expect(Number(put.metadata.resourceVersion)).toBeGreaterThan(Number(got.metadata.resourceVersion));

    const list = await client.get<{ items: unknown[] }>(PODS, { limit: 10, labelSelector: undefined });
    expect(list.items).toHaveLength(1);
    expect(fake.requestsWhere({ method: 'GET', path: PODS }).at(-1)?.query.get('limit')).toBe('10');
    expect(fake.requestsWhere({ method: 'GET', path: PODS }).at(-1)?.query.has('labelSelector')).toBe(false);

    await client.delete(`${PODS}/a`, { gracePeriodSeconds: 0 });
    expect(fake.get(`${PODS}/a`)).toBeUndefined();
    expect(client.stats).toEqual({ requests: 6, errors: 0 });
  });

  it('turns error statuses into KubeApiError with status, reason and message', async () => {
    client = new KubeClient(fake.kubeConfig());
    const missing = await client.get(`${PODS}/nope`).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(KubeApiError);
    expect(missing).toMatchObject({ status: 404, reason: 'NotFound', method: 'GET', path: `${PODS}/nope` });
    expect((missing as KubeApiError).message).toContain('pods "nope" not found');
    expect(isStatus(missing, 404)).toBe(true);
    expect(isStatus(missing, 409)).toBe(false);
    expect(isStatus(new Error('x'), 404)).toBe(false);

    await client.post(PODS, pod('a'));
    const dup = await client.post(PODS, pod('a')).catch((e: unknown) => e);
    expect(dup).toMatchObject({ status: 409, reason: 'AlreadyExists' });

    const cur = await client.get<{ metadata: { resourceVersion: string } }>(`${PODS}/a`);
    await client.mergePatch(`${PODS}/a`, { metadata: { labels: { bump: '1' } } });
    const stale = await client.put(`${PODS}/a`, cur).catch((e: unknown) => e);
    expect(stale).toMatchObject({ status: 409, reason: 'Conflict' });

    // A body that is not a Status (a proxy's HTML page): the HTTP reason phrase and the text.
    fake.intercept((r, res) => {
      if (r.path !== '/api/v1/proxied') return false;
      res.writeHead(502, 'Bad Gateway', { 'Content-Type': 'text/html' });
      res.end('<html>upstream down</html>');
      return true;
    });
    const proxied = await client.get('/api/v1/proxied').catch((e: unknown) => e);
    expect(proxied).toMatchObject({ status: 502, reason: 'Bad Gateway', message: expect.stringContaining('<html>upstream down</html>') as unknown });
    expect(client.stats.errors).toBe(4);
  });

  it('sends the bearer token from the kubeconfig; a wrong one gets 401', async () => {
    client = new KubeClient(fake.kubeConfig());
    await client.get(PODS);
    expect(fake.requests.at(-1)?.headers.authorization).toBe(`Bearer ${fake.token}`);
    expect(fake.requests.at(-1)?.headers['user-agent']).toBe('sits-scheduler/0.1');
    const wrong = new KubeClient(fake.kubeConfig('not-the-token'));
    try {
      const e = await wrong.get(PODS).catch((err: unknown) => err);
      expect(e).toMatchObject({ status: 401, reason: 'Unauthorized' });
    } finally {
      wrong.close();
    }
  });

  it('keeps at most maxInFlight requests at the server; the rest wait in order', async () => {
    client = new KubeClient(fake.kubeConfig(), { maxInFlight: 3 });
    const held: (() => void)[] = [];
    fake.intercept(() => new Promise<false>((resolve) => held.push(() => resolve(false))));
    const all = Array.from({ length: 10 }, (_, i) => client.get<{ items: unknown[] }>(PODS, { i }));
    let released = 0;
    try {
      while (released < 10) {
        // Each release lets exactly one more in: the server holds min(3, left) and has seen no more than that.
        const expectNow = Math.min(3, 10 - released);
        await waitFor(
          `${expectNow} requests in flight at the server`,
          async () => held.length === released + expectNow && fake.inFlight === expectNow,
          30_000,
          10,
        );
        held[released++]?.();
      }
    } finally {
      for (const h of held) h();
    }
    await Promise.all(all);
    expect(fake.maxInFlight).toBe(3);
    // FIFO: the server saw them in the order they were issued.
    expect(fake.requestsWhere({ method: 'GET' }).map((r) => r.query.get('i'))).toEqual(Array.from({ length: 10 }, (_, i) => String(i)));
  });

  it('reuses keep-alive connections: one for sequential requests, at most maxInFlight for concurrent ones', async () => {
    client = new KubeClient(fake.kubeConfig(), { maxInFlight: 4 });
    for (let i = 0; i < 20; i++) await client.get(PODS);
    expect(fake.connections).toBe(1);
    await Promise.all(Array.from({ length: 40 }, () => client.get(PODS)));
    expect(fake.connections).toBeLessThanOrEqual(4);
    expect(client.stats.requests).toBe(60);
  });

  it('(why ADR 0042 keeps this client) client-node 1.4 opens a new connection for every request', async () => {
    // If this fails after an upgrade, client-node reuses connections now: revisit ADR 0042.
    const api = fake.kubeConfig().makeApiClient(CoreV1Api);
    for (let i = 0; i < 5; i++) await api.listNamespacedPod({ namespace: 'ns' });
    expect(fake.requestsWhere({ method: 'GET', path: PODS })).toHaveLength(5);
    expect(fake.connections).toBe(5);
  });

  it('parses a watch stream whose newline-delimited events are split across chunks', async () => {
    client = new KubeClient(fake.kubeConfig());
    const tick = (): Promise<void> => new Promise((r) => setTimeout(r, 20));
    fake.intercept(async (r, res) => {
      if (!r.watch) return false;
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.flushHeaders();
      const pieces = [
        '{"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"5"}',
        '}}\n{"type":"MODI',
        'FIED","object":{"metadata":{"name":"a","resourceVersion":"6"}}}\r\n\n',
        '{"type":"DELETED","object":{"metadata":{"name":"é","resourceVersion":"7"}}}\n',
        'not json\n',
        '{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"8"}}}\n',
      ];
      for (const p of pieces) {
        // A multi-byte character split between two chunks, too.
        if (p.includes('é')) {
          const b = Buffer.from(p);
          const cut = b.indexOf(Buffer.from('é')) + 1;
          res.write(b.subarray(0, cut));
          await tick();
          res.write(b.subarray(cut));
        } else res.write(p);
        await tick();
      }
      res.end();
      return true;
    });
    const events: WatchEvent<{ metadata: { name?: string; resourceVersion: string } }>[] = [];
    let done: Error | undefined | 'pending' = 'pending';
    await client.watch<{ metadata: { name?: string; resourceVersion: string } }>(
      PODS,
      { resourceVersion: '4' },
      (e) => events.push(e),
      (err) => (done = err),
    );
    await waitFor('the watch to end', async () => done !== 'pending');
    expect(done).toBeUndefined();
    expect(events.map((e) => [e.type, e.object.metadata.name, e.object.metadata.resourceVersion])).toEqual([
      ['ADDED', 'a', '5'],
      ['MODIFIED', 'a', '6'],
      ['DELETED', 'é', '7'],
      ['BOOKMARK', undefined, '8'],
    ]);
    const w = fake.requestsWhere({ watch: true })[0];
    expect(w?.query.get('resourceVersion')).toBe('4');
    expect(w?.query.get('allowWatchBookmarks')).toBe('true');
  });

  it('streams live watch events and reports an HTTP error as KubeApiError', async () => {
    client = new KubeClient(fake.kubeConfig());
    const events: string[] = [];
    const h = await client.watch<{ metadata: { name: string } }>(
      PODS,
      { resourceVersion: fake.resourceVersion },
      (e) => events.push(`${e.type} ${e.object.metadata.name}`),
      () => undefined,
    );
    await waitFor('the watch to open', async () => fake.openWatches === 1);
    fake.create(PODS, pod('a'));
    fake.delete(`${PODS}/a`);
    await waitFor('two events', async () => events.length === 2);
    expect(events).toEqual(['ADDED a', 'DELETED a']);
    h.stop();
    await waitFor('the server to see the watch closed', async () => fake.openWatches === 0);

    const gone = await FakeApiServer.start({ goneAs: 'status' });
    const c2 = new KubeClient(gone.kubeConfig());
    try {
      gone.create(PODS, pod('b'));
      gone.compact();
      let err: Error | undefined | 'pending' = 'pending';
      await c2.watch(
        PODS,
        { resourceVersion: '1' },
        () => undefined,
        (e) => (err = e),
      );
      await waitFor('the watch to fail', async () => err !== 'pending');
      expect(err).toBeInstanceOf(KubeApiError);
      expect(err).toMatchObject({ status: 410, reason: 'Expired', method: 'WATCH' });
      // Not a Status (a proxy's page): the reason phrase and the text, as for other requests.
      gone.intercept((r, res) => {
        res.writeHead(503, 'Service Unavailable', { 'Content-Type': 'text/plain' });
        res.end('no healthy upstream');
        return true;
      });
      let err2: Error | undefined | 'pending' = 'pending';
      await c2.watch(
        PODS,
        {},
        () => undefined,
        (e) => (err2 = e),
      );
      await waitFor('the second watch to fail', async () => err2 !== 'pending');
      expect(err2).toMatchObject({ status: 503, reason: 'Service Unavailable', message: expect.stringContaining('no healthy upstream') as unknown });
    } finally {
      c2.close();
      await gone.close();
    }
  });
});

describe('warningTexts', () => {
  it('reads the apiserver Warning headers: several per header, escaped quotes, several headers', () => {
    expect(warningTexts(undefined)).toEqual([]);
    expect(warningTexts('299 - "[rule-a] spec.x: do this"')).toEqual(['[rule-a] spec.x: do this']);
    expect(warningTexts(['299 - "one, with a comma", 299 - "two \\"quoted\\""', '299 - "three"'])).toEqual(['one, with a comma', 'two "quoted"', 'three']);
  });
});
