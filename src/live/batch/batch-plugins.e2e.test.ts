// Issue 13 Deliver 9 live (ADR 0156): a BatchInferenceJob's batch-size strategy as a WebAssembly module in a
// ConfigMap, on the dev cluster with real engines (kits/batch-e2e-kit.ts: apiserver + etcd, PV binder, SITS
// scheduler, the fake kubelet running llama-server stand-ins and `sits batch-worker` containers). The controller
// mounts the ConfigMap key into the worker pod; the fake kubelet materialises that volume from the real ConfigMap,
// as a kubelet would; the worker loads the module from the mounted file. The AssemblyScript example
// (examples/batch-plugins/latency-ratio.ts), compiled here, changes the batch size; a module that traps is refused
// with the StrategyPlugin condition False, and that job runs on the built-in size, every record once. Then the
// fake kubelet's configMap volumes on their own: a missing ConfigMap holds a pod, its creation starts it.
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import asc from 'assemblyscript/asc';
import wabtInit from 'wabt';
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BatchInferenceJob } from '../../api/schema/batch-inference-job.ts';
import { waitFor } from '../../harness/e2e-kit.ts';
import { BATCH_PLUGIN_MOUNT } from '../../controllers/batch-inference/worker-protocol.ts';
import { MODEL_DIR } from '../../serving/pod-template.ts';
import { startBatchE2e, type BatchE2e } from '../../kits/batch-e2e-kit.ts';
import { claimsUnder } from './batch-jobs.ts';

const EXAMPLE = new URL('../../../examples/batch-plugins/latency-ratio.ts', import.meta.url).pathname;
const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
const strategyCondition = (j: BatchInferenceJob) => j.status?.conditions?.find((c) => c.type === 'StrategyPlugin');

describe('BatchInferenceJob WASM batch-size plugins from a ConfigMap, live', () => {
  let e: BatchE2e;
  let good: Uint8Array;
  let trap: Uint8Array;

  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sits-wasm-e2e-'));
    try {
      const out = join(dir, 'latency-ratio.wasm');
      const r = await asc.main([EXAMPLE, '--outFile', out, '--runtime', 'stub', '--maximumMemory', '1', '-O3'], {});
      if (r.error) throw new Error(`asc: ${r.error.message}\n${r.stderr.toString()}`);
      good = readFileSync(out);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    // ABI 1 on its face (the exports and arities are right), but batch_size traps: the load's self-test refuses it.
    const wabt = await wabtInit();
    const m = wabt.parseWat(
      'trap.wat',
      `(module (func (export "sits_abi_version") (result i32) i32.const 1)
        (func (export "batch_size") (param i32 i32 i32 f64 f64 f64 f64 f64 f64 f64 f64) (result i32) unreachable))`,
    );
    trap = m.toBinary({}).buffer;
    m.destroy();
    e = await startBatchE2e({ ns: 'batchwasm' });
    // The operator's limits: generous, so that a loaded CI machine starting the plugin's thread slowly refuses nothing.
    await e.startControllers({ batch: { volumes: claimsUnder(e.claimsDir), tickMs: 500, pluginLimits: { loadTimeoutMs: 60_000, callTimeoutMs: 10_000 } } });
    await e.cluster.client.post(`/api/v1/namespaces/${e.ns}/configmaps`, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'batch-plugins' },
      binaryData: { 'latency-ratio.wasm': Buffer.from(good).toString('base64'), 'trap.wasm': Buffer.from(trap).toString('base64') },
    });
  }, 300_000);

  afterAll(async () => {
    await e?.stop();
  });

  // Before the engine is up both start blind: the plugin's first answer (KV unknown, 0 tokens) is the minimum, 3;
  // the built-in's is the job's batchSize, 8. Once the engine is up (llama-server, --parallel 2: /props says 2 slots
  // of the tiny model's context) each starts again from it, and no targetLatencyMs means no AIMD after that:
  // - the example plugin divides the free KV tokens by the median prompt + p90 output: far more than the max, so 16;
  // - the built-in fits the memory too, but the engine runs 2 sequences at once, and the job's minimum is 3.
  // Different answers from the same engine facts: the plugin, not the built-in, set the good job's size.
  const batching = { batchSize: 8, dynamic: { minBatchSize: 3, maxBatchSize: 16 } };
  const withPlugin = (key: string, bytes: Uint8Array) => ({
    batching,
    strategy: { batchSize: { wasm: { configMap: { name: 'batch-plugins', key }, sha256: sha(bytes) } } },
  });

  it('the example plugin, mounted from its ConfigMap, sets the batch size; a trapping one is refused and the built-in runs the job, every record once', async () => {
    const goodIds = e.writeInput('good.jsonl', 200, 'g');
    const badIds = e.writeInput('bad.jsonl', 200, 'b');
    await e.createJob('good', 'good.jsonl', 1, withPlugin('latency-ratio.wasm', good));
    await e.createJob('bad', 'bad.jsonl', 1, withPlugin('trap.wasm', trap));

    // The worker pod carries the ConfigMap volume the kubelet materialises, and the worker is told where it is.
    const [pod] = await waitFor(
      "the good job's worker pod",
      async () => {
        const ps = await e.workerPods('good');
        return ps.length === 1 ? ps : undefined;
      },
      120_000,
      200,
    );
    expect(pod?.spec?.volumes?.find((v) => v.configMap !== undefined)?.configMap).toMatchObject({
      name: 'batch-plugins',
      items: [{ key: 'latency-ratio.wasm', path: 'latency-ratio.wasm' }],
      optional: true,
    });
    expect(pod?.spec?.containers?.[1]?.args).toEqual(expect.arrayContaining(['--plugin-configmap-dir', BATCH_PLUGIN_MOUNT]));

    // The first verdict a worker reports is the one asserted (no waiting for a wished-for value).
    const active = await waitFor(
      'the good job shows its plugin verdict',
      async () => {
        const j = await e.job('good');
        return strategyCondition(j) !== undefined && j.status?.currentBatchSize !== undefined ? j : undefined;
      },
      180_000,
      500,
    ).catch(async (err: unknown) => {
      throw new Error(
        `${(err as Error).message}\n${JSON.stringify((await e.job('good')).status)}\n${e.logs
          .filter((l) => !/^\[(kube-|etcd)/.test(l))
          .slice(-40)
          .join('\n')}`,
      );
    });
    expect(strategyCondition(active)).toMatchObject({
      status: 'True',
      reason: 'PluginActive',
      message: expect.stringMatching(
        /^worker good-0: batchSize: plugin configmap\/batch-plugins\/latency-ratio\.wasm loaded; start batch size 3 \(plugin; the built-in's: 8\)/,
      ),
    });
    expect(active.status?.currentBatchSize).toBe(16);

    const refused = await waitFor(
      'the bad job shows its plugin verdict',
      async () => {
        const j = await e.job('bad');
        return strategyCondition(j) !== undefined && j.status?.currentBatchSize !== undefined ? j : undefined;
      },
      180_000,
      500,
    );
    expect(strategyCondition(refused)).toMatchObject({
      status: 'False',
      reason: 'PluginRejected',
      message: expect.stringMatching(
        /^worker bad-0: batchSize: plugin configmap\/batch-plugins\/trap\.wasm rejected: self-test of batch_size: .*unreachable.*; built-in strategies used/,
      ),
    });
    expect(refused.status?.currentBatchSize).toBe(3);

    // Both finish with every custom_id once, in input order; the verdicts and sizes stay in status.
    for (const [name, ids, size, verdict] of [
      ['good', goodIds, 16, 'True'],
      ['bad', badIds, 3, 'False'],
    ] as const) {
      const done = await e.finished(name, 300_000);
      expect(done.status?.phase).toBe('Succeeded');
      expect(done.status?.progress?.recordsProcessed).toBe(ids.length);
      expect(e.outputOf(name).ids).toEqual(ids);
      expect(e.manifestOf(name)).toMatchObject({ state: 'complete' });
      expect(done.status?.currentBatchSize).toBe(size);
      expect(strategyCondition(done)?.status).toBe(verdict);
    }
  }, 900_000);

  // The fake kubelet's configMap volumes are general (not plugin-specific): a required volume of a ConfigMap that is
  // not there holds the pod in ContainerCreating with the kubelet's FailedMount Event; once the ConfigMap exists the
  // pod starts and its container reads the projected file (`sits lint` exits 0 on the manifest, 2 on a missing file).
  it('a pod waits in ContainerCreating for a missing ConfigMap, then starts and reads the projected file', async () => {
    const client = e.cluster.client;
    const nodes = await client.get<{ items: { metadata: { name: string } }[] }>('/api/v1/nodes');
    const node = nodes.items[0]?.metadata.name ?? '';
    const pods = `/api/v1/namespaces/${e.ns}/pods`;
    await client.post(pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'lint-probe' },
      spec: {
        nodeName: node,
        restartPolicy: 'Never',
        containers: [
          { name: 'server', image: 'ghcr.io/ggml-org/llama.cpp:server', args: ['--model', MODEL_DIR, '--port', '8080'] },
          { name: 'lint', image: 'sits', command: ['sits', 'lint', '/etc/lint/manifests/cm.yaml'], volumeMounts: [{ name: 'input', mountPath: '/etc/lint' }] },
        ],
        volumes: [{ name: 'input', configMap: { name: 'lint-input', items: [{ key: 'cm.yaml', path: 'manifests/cm.yaml' }] } }],
      },
    });
    const event = await waitFor(
      'a FailedMount Event',
      async () => {
        const evs = await client.get<{ items: { reason?: string; message?: string; involvedObject?: { name?: string } }[] }>(
          `/api/v1/namespaces/${e.ns}/events`,
        );
        return evs.items.find((x) => x.reason === 'FailedMount' && x.involvedObject?.name === 'lint-probe');
      },
      120_000,
      250,
    );
    expect(event.message).toBe('MountVolume.SetUp failed for volume "input" : configmap "lint-input" not found');
    const waiting = await client.get<V1Pod>(`${pods}/lint-probe`);
    expect(waiting.status?.phase).toBe('Pending');
    expect(waiting.status?.containerStatuses?.map((c) => c.state?.waiting?.reason)).toEqual(['ContainerCreating', 'ContainerCreating']);

    await client.post(`/api/v1/namespaces/${e.ns}/configmaps`, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'lint-input' },
      data: { 'cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: b\n' },
    });
    const done = await waitFor(
      'the pod ended',
      async () => {
        const p = await client.get<V1Pod>(`${pods}/lint-probe`);
        return p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed' ? p : undefined;
      },
      180_000,
      250,
    );
    expect(done.status?.phase).toBe('Succeeded');
    await client.delete(`${pods}/lint-probe`).catch(() => undefined);
  }, 600_000);
});
