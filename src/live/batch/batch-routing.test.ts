// The routing ports live: the scheduler's fragmentation read as its metrics read it, and a real WebAssembly routing
// module loaded from the plugin directory deciding a job's route through the controller's routeJob.
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import wabtInit from 'wabt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withDefaults } from '../../api/validate.ts';
import { routeJob } from '../../controllers/batch-inference/controller.ts';
import type { BatchJobObject } from '../../controllers/batch-inference/pods.ts';
import { clusterFragmentation } from '../../core/plugins/fgd/fragmentation.ts';
import type { LiveScheduler } from '../../kube/scheduler/live-scheduler.ts';
import { routePluginLoader, schedulerFragmentation } from './batch-routing.ts';

let dir: string;
let route: Uint8Array;
const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

beforeAll(async () => {
  const wabt = await wabtInit();
  // route() = 2: gpu-fragments, full precision.
  route = wabt
    .parseWat(
      'r.wat',
      '(module (func (export "sits_abi_version") (result i32) i32.const 1) (func (export "route") (param f64 i32 i32 f64 f64) (result i32) i32.const 2))',
    )
    .toBinary({}).buffer;
  dir = mkdtempSync(join(tmpdir(), 'sits-route-'));
  writeFileSync(join(dir, 'route.wasm'), route);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const job = (wasm: Record<string, unknown>): BatchJobObject =>
  withDefaults('BatchInferenceJob', {
    apiVersion: 'ai.sits2026.dev/v1',
    kind: 'BatchInferenceJob',
    metadata: { name: 'j', namespace: 'ns', uid: 'u' },
    spec: {
      runtime: 'llamacpp',
      model: { uri: 'pvc://m/x.gguf' },
      input: { uri: 'pvc://d/in.jsonl' },
      output: { uri: 'pvc://d/out' },
      strategy: { routing: { wasm } },
    },
  }) as BatchJobObject;
const samples = [1, 2, 3].map(() => ({ records: 10, promptTokens: 100, outputTokens: 20, ms: 300, peakKvFraction: 0.2 }));
const limits = { loadTimeoutMs: 60_000, callTimeoutMs: 10_000 };

describe('the batch controller routing ports', () => {
  it('a routing module file from the plugin directory decides the route', () => {
    const r = routeJob(job({ file: 'route.wasm', sha256: sha(route) }), samples, 0, { fragmentation: () => 0.1, routePlugin: routePluginLoader(dir, limits) });
    expect(r?.reason).toBe('RoutedByPlugin');
    expect(r?.routing).toMatchObject({ route: 'gpu-fragments', source: 'plugin', fragmentation: 0.1 });
    expect(r?.routing.reasons[0]).toBe('plugin route.wasm: route gpu-fragments');
  });
  it('a module with another digest is refused with the loader reason and the built-in decides', () => {
    const r = routeJob(job({ file: 'route.wasm', sha256: '0'.repeat(64) }), samples, 0, {
      fragmentation: () => 0.1,
      routePlugin: routePluginLoader(dir, limits),
    });
    expect(r?.reason).toBe('PluginRefused');
    expect(r?.routing).toMatchObject({ route: 'gpu-shared', source: 'builtin' });
    expect(r?.routing.reasons).toContain(
      `spec.strategy.routing.wasm plugin route.wasm: sha256 ${sha(route)} differs from the ${'0'.repeat(64)} the job names; built-in route used`,
    );
  });
  it('reads the fragmentation the scheduler metrics report, undefined with no node', () => {
    const nodes = [
      { spec: { gpus: [{ model: 'H100' }, { model: 'H100' }] }, cpuFreeMilli: 8000, gpuFree: [1000, 500] },
      { spec: { gpus: [{ model: 'H100' }] }, cpuFreeMilli: 8000, gpuFree: [250] },
    ];
    const shapes = [{ cpuMilli: 1000, gpuMilli: 1000, gpuCount: 1, gpuModels: [], weight: 1 }];
    const view = (n: typeof nodes) => ({ metricsView: () => ({ state: { nodes: n }, shapes }) }) as unknown as Pick<LiveScheduler, 'metricsView'>;
    const ratio = schedulerFragmentation(view(nodes))();
    expect(ratio).toBe(clusterFragmentation(nodes, shapes).ratio);
    // 1750 milli free, the 500 and 250 pieces fit no whole-GPU pod.
    expect(ratio).toBeCloseTo(750 / 1750, 12);
    expect(schedulerFragmentation(view([]))()).toBeUndefined();
  });
});
