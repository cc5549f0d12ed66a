// The repeat check's memory: entries older than a minute suppress nothing, so they are swept once a minute; before,
// they stayed until 50,000 subjects had piled up (under a steady churn of 10 pods/s, 80 minutes of growth).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeClient } from '../client/client.ts';
import { ClusterCache } from '../cache/cluster-cache.ts';
import { KubeEventSink } from './event-sink.ts';
import { startControlPlane, type ControlPlane } from '../../harness/control-plane.ts';
import { createNs } from '../../harness/e2e-kit.ts';

let plane: ControlPlane;
let client: KubeClient;

beforeAll(async () => {
  plane = await startControlPlane();
  client = new KubeClient(plane.kubeConfig());
  await createNs(client, 'ev');
});
afterAll(async () => {
  client?.close();
  await plane?.stop();
});

describe('KubeEventSink on the real apiserver', () => {
  it('writes a repeat within a minute once, and forgets subjects a minute old', async () => {
    let now = 1_000_000;
    const logs: string[] = [];
    const sink = new KubeEventSink(client, new ClusterCache(), {
      component: 'sits-scheduler',
      instance: 'test',
      enabled: true,
      log: (m) => logs.push(m),
      nowMs: () => now,
    });
    for (const name of ['a', 'b', 'c']) sink.emit({ kind: 'Scheduled', subject: `ev/${name}`, message: `bound ev/${name}` });
    now += 30_000;
    sink.emit({ kind: 'Scheduled', subject: 'ev/a', message: 'bound ev/a' });
    expect(sink.sizes().recent).toBe(3);
    now += 31_000;
    sink.emit({ kind: 'Scheduled', subject: 'ev/d', message: 'bound ev/d' });
    // a, b and c were last written 61 s ago: gone; only d is remembered.
    expect(sink.sizes().recent).toBe(1);
    await sink.drain();
    expect(sink.sizes().inFlight).toBe(0);
    const list = await client.get<{ items: { involvedObject?: { name?: string } }[] }>('/api/v1/namespaces/ev/events');
    expect(list.items.map((e) => e.involvedObject?.name).sort()).toEqual(['a', 'b', 'c', 'd']);
    expect(logs).toEqual([]);
  });

  it('past its cap forgets the subjects written longest ago, so only their repeats are written again', async () => {
    let now = 5_000_000;
    const sink = new KubeEventSink(client, new ClusterCache(), {
      component: 'sits-scheduler',
      instance: 'test',
      enabled: true,
      log: () => undefined,
      nowMs: () => now,
      recentMax: 2,
    });
    const emit = (name: string): void => sink.emit({ kind: 'FailedScheduling', subject: `ev/${name}`, message: `no room for ev/${name}` });
    emit('p');
    now += 1_000;
    emit('q');
    emit('q'); // a repeat within the minute: not written
    emit('r'); // past the cap: p, written longest ago, is forgotten
    expect(sink.sizes().recent).toBe(2);
    emit('q'); // still remembered: not written
    emit('p'); // forgotten: written again
    await sink.drain();
    const list = await client.get<{ items: { reason?: string; involvedObject?: { name?: string } }[] }>('/api/v1/namespaces/ev/events');
    const failed = list.items.filter((e) => e.reason === 'FailedScheduling').map((e) => e.involvedObject?.name);
    expect(failed.sort()).toEqual(['p', 'p', 'q', 'r']);
  });
});
