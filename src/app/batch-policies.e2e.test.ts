// Issue 13 live, the policies on real engines (app/batch-e2e-kit.ts: apiserver + etcd, PV binder, SITS scheduler,
// the fake kubelet running llama-server stand-ins and `sits batch-worker` containers). The fault ladder: the engine
// of one worker's GPU fails every completion (EnginePodsOptions.faultDir, a file per node/GPU); the shard is
// retried on that device at half concurrency, then split over the other worker, the GPU quarantined on its Node
// for 15 minutes (the scheduler's and device plugin's annotation), the worker replaced on a healthy GPU, and every
// custom_id is in the output exactly once.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { V1Node } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANNOTATION } from '../api/wire.ts';
import { startBatchE2e, type BatchE2e } from './batch-e2e-kit.ts';
import { parseQuarantine } from '../core/health/quarantine.ts';
import { waitFor } from '../harness/e2e-kit.ts';
import { nodeFromK8s } from '../kube/labels.ts';
import { workerPodName } from '../controllers/batch-inference/pods.ts';
import { parseAssignment } from '../controllers/batch-inference/worker-protocol.ts';

describe('BatchInferenceJob policies on real engines', () => {
  let e: BatchE2e;
  let faultDir = '';

  beforeAll(async () => {
    faultDir = join(process.env.TMPDIR ?? '/tmp', `sits-batch-faults-${process.pid}`);
    mkdirSync(faultDir, { recursive: true });
    e = await startBatchE2e({ ns: 'batchp', engines: { faultDir } });
    await e.startControllers();
  }, 240_000);

  afterAll(async () => {
    await e?.stop();
    rmSync(faultDir, { recursive: true, force: true });
  });

  it('walks a failing device up the fault ladder, quarantines it on its Node, and loses no record', async () => {
    const ids = e.writeInput('faulty.jsonl', 300, 'f');
    // The breaker would cut the failing shard as a straggler; this test is about the ladder alone.
    await e.createJob('faulty', 'faulty.jsonl', 2, { sharding: { reshardStragglers: false } });
    const pods = await waitFor('two worker pods bound', async () => {
      const ps = await e.workerPods('faulty');
      return ps.length === 2 && ps.every((p) => p.spec?.nodeName !== undefined && (p.metadata?.annotations?.[ANNOTATION.gpuIndices] ?? '') !== '') ? ps : undefined;
    }, 60_000, 100);
    const bad = pods.find((p) => p.metadata?.name === workerPodName('faulty', 0));
    const node = bad?.spec?.nodeName ?? '';
    const gpu = bad?.metadata?.annotations?.[ANNOTATION.gpuIndices] ?? '';
    const device = `${node}/${gpu}`;
    // The injected fault: from now on, the engine on that GPU answers every completion with a 500.
    mkdirSync(join(faultDir, node), { recursive: true });
    writeFileSync(join(faultDir, node, gpu), 'injected by the e2e test\n');

    // Rung 1 is visible on the pod: the same worker is given the shard again at half its concurrency.
    const rung1 = await waitFor('a retry on the failing device at half concurrency', async () => {
      const p = (await e.workerPods('faulty')).find((x) => x.metadata?.uid === bad?.metadata?.uid);
      const a = parseAssignment(p?.metadata?.annotations?.[ANNOTATION.batchAssignment]);
      return a !== undefined && !('error' in a) && a.concurrency === 0.5 ? a : undefined;
    }, 60_000, 100);
    expect(rung1.end - rung1.start).toBeGreaterThan(1);

    // Rung 2: quarantined on the Node, with the ladder's reason, for 15 minutes.
    const q = await waitFor('the GPU quarantined on its Node', async () => {
      const n = await e.cluster.client.get<V1Node>(`/api/v1/nodes/${node}`);
      const text = n.metadata?.annotations?.[ANNOTATION.gpuQuarantine];
      if (text === undefined) return undefined;
      const parsed = parseQuarantine(node, text);
      return parsed.ok ? { entries: parsed.value, node: n } : undefined;
    }, 60_000, 200);
    const entry = q.entries.find((x) => String(x.gpu) === gpu);
    expect(entry).toMatchObject({ source: 'batch-fault-ladder' });
    expect(entry?.reason).toMatch(/fault ladder: crash on .* at rung 1: .*injected device fault/);
    expect((entry?.untilMs ?? 0) - (entry?.sinceMs ?? 0)).toBeGreaterThanOrEqual(14.9 * 60_000);
    // What the scheduler (and `sits explain`) sees of that GPU: unhealthy, with the quarantine's text.
    const seen = nodeFromK8s(q.node);
    expect(seen.ok).toBe(true);
    const g = seen.ok ? seen.value.gpus.find((x) => String(x.index) === gpu) : undefined;
    expect(g).toMatchObject({ healthy: false });
    expect(g?.unhealthyReason).toMatch(/^quarantined until .*: batch job fault ladder: /);

    // The idle worker on the quarantined GPU is replaced; SITS places the new one on another GPU.
    const moved = await waitFor('worker 0 replaced on a healthy GPU', async () => {
      const p = (await e.workerPods('faulty')).find((x) => x.metadata?.name === workerPodName('faulty', 0));
      if (p === undefined || p.metadata?.uid === bad?.metadata?.uid || p.spec?.nodeName === undefined) return undefined;
      const idx = p.metadata?.annotations?.[ANNOTATION.gpuIndices];
      return idx === undefined || idx === '' ? undefined : `${p.spec.nodeName}/${idx}`;
    }, 60_000, 200);
    expect(moved).not.toBe(device);

    const j = await e.finished('faulty', 120_000);
    expect(j.status?.phase).toBe('Succeeded');
    expect(j.status?.progress).toMatchObject({ recordsTotal: 300, recordsProcessed: 300, recordsFailed: 0 });
    expect(j.status?.quarantinedGpus).toContain(device);
    const fr = j.status?.conditions?.find((c) => c.type === 'FaultRecovery');
    expect(fr).toMatchObject({ status: 'True', reason: 'DeviceQuarantined' });
    // The walk, in order: rung 1 on the same device at half concurrency, then split over other devices + quarantine.
    expect(fr?.message).toMatch(new RegExp(`on ${device}: crash .*rung 1: same device at 0.5× concurrency.*on ${device}: crash .*rung 2: split over other devices \\(2 pieces\\)`));
    expect(fr?.message).toContain(`quarantined ${device} until`);
    const out = e.outputOf('faulty');
    expect(out.ids).toEqual(ids);
    expect(out.lines.every((l) => l.error === null && l.response?.status_code === 200)).toBe(true);
    expect(e.manifestOf('faulty').state).toBe('complete');
  }, 480_000);
});
