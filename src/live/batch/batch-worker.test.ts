// The batch worker's live batch size against a test double of the engine's latency: a local HTTP server answering
// OpenAI completions after a delay that grows with the requests in flight (as a real engine's step time does), so
// the p99 the worker observes depends on the batch size it chooses. The in-flight count is measured at the server.
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import wabtInit from 'wabt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BatchPolicy } from '../../controllers/batch-inference/live-batch.ts';
import { LiveBatchSize, tokenMixOf } from '../../controllers/batch-inference/live-batch.ts';
import type { PluginCaller } from '../../controllers/batch-inference/wasm-plugin.ts';
import { loadJobPlugins } from '../../wasm/job-plugins.ts';
import { runStages } from '../../controllers/batch-inference/stage-runner.ts';

interface EngineLatencyDouble {
  readonly url: string;
  /** Delay of one request, ms, from the requests in flight when it arrived. */
  delay: (inFlight: number) => number;
  maxInFlight: number;
  close(): Promise<void>;
}

async function startEngineLatencyDouble(delay: (inFlight: number) => number): Promise<EngineLatencyDouble> {
  let inFlight = 0;
  const d: { delay: (n: number) => number; maxInFlight: number } = { delay, maxInFlight: 0 };
  const server: Server = createServer((req, res) => {
    inFlight++;
    d.maxInFlight = Math.max(d.maxInFlight, inFlight);
    req.resume();
    req.on('end', () => {
      setTimeout(() => {
        inFlight--;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            id: 'cmpl-1',
            object: 'text_completion',
            choices: [{ index: 0, text: 'ok', finish_reason: 'stop' }],
            usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
          }),
        );
      }, d.delay(inFlight));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return Object.assign(d, {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((r) => server.close(() => r())),
  }) as EngineLatencyDouble;
}

/** Sends `n` completions through the worker's infer stage, the sizer moving its slots; the sizes after each window. */
async function drive(engine: EngineLatencyDouble, n: number, sizer: LiveBatchSize): Promise<number[]> {
  const sizes = [sizer.size];
  let next = 0;
  const stop = new AbortController();
  // The worker's infer stage alone: its concurrency is the live batch size, read at every start.
  await runStages(
    () => (next < n ? next++ : undefined),
    [
      {
        name: 'infer',
        concurrency: () => sizer.size,
        run: async () => {
          const t0 = performance.now();
          const r = await fetch(`${engine.url}/v1/completions`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ model: 'm', prompt: 'hi', max_tokens: 1 }),
          });
          await r.json();
          const c = sizer.observe(performance.now() - t0);
          if (c !== undefined) sizes.push(c.size);
          return 'next';
        },
      },
    ],
    () => 1,
    stop.signal,
    () => performance.now(),
  );
  return sizes;
}

const mix = tokenMixOf([{ prompt: 'hi', max_tokens: 1 }]);

describe('the batch worker drives its in-flight requests by the live batch size', () => {
  let engine: EngineLatencyDouble;
  beforeAll(async () => {
    engine = await startEngineLatencyDouble(() => 5);
  });
  afterAll(() => engine.close());

  it('grows while the observed p99 is under the SLA', async () => {
    engine.delay = () => 5;
    engine.maxInFlight = 0;
    // SLA far above a 5 ms engine even on a loaded machine: every window is under it.
    const sizer = new LiveBatchSize({ start: 4, min: 1, max: 24, targetP99Ms: 5000 }, mix, undefined, 8);
    const sizes = await drive(engine, 160, sizer);
    expect(sizes[0]).toBe(4);
    for (let i = 1; i < sizes.length; i++) expect(sizes[i]).toBeGreaterThanOrEqual(sizes[i - 1] as number);
    expect(sizer.size).toBe(24);
    // The server saw more than the start size at once: the slots followed the size.
    expect(engine.maxInFlight).toBeGreaterThan(4);
    expect(engine.maxInFlight).toBeLessThanOrEqual(24);
  });

  it('shrinks while the observed p99 is over the SLA', async () => {
    // 40 ms a request in flight: 16 in flight take 640 ms, over a 100 ms SLA; one alone is 40 ms, under it.
    engine.delay = (n) => 40 * n;
    engine.maxInFlight = 0;
    const sizer = new LiveBatchSize({ start: 16, min: 1, max: 32, targetP99Ms: 100 }, mix, undefined, 8);
    const sizes = await drive(engine, 64, sizer);
    expect(sizes[0]).toBe(16);
    expect(sizes[1]).toBe(11); // ⌊16 × 0.7⌋
    expect(Math.min(...sizes)).toBeLessThan(8);
  });

  it('keeps the start size when the job sets no SLA', async () => {
    engine.delay = () => 5;
    const sizer = new LiveBatchSize({ start: 6, min: 1, max: 32 }, mix, undefined, 8);
    expect(await drive(engine, 40, sizer)).toEqual([6]);
  });
});

describe("the job's batch-size plugin decides the sizes", () => {
  let dir: string;
  let wasm: Uint8Array;
  let engine: EngineLatencyDouble;
  const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');
  beforeAll(async () => {
    const wabt = await wabtInit();
    // Starts at 3, then adds 10 a window up to max whatever the latency: unlike AIMD, it never backs off.
    wasm = wabt
      .parseWat(
        'grow.wat',
        `(module (func (export "sits_abi_version") (result i32) i32.const 1)
          (func (export "batch_size") (param i32 i32 i32 f64 f64 f64 f64 f64 f64 f64 f64) (result i32)
            (if (result i32) (i32.eqz (local.get 0))
              (then (i32.const 3))
              (else (select (local.get 2) (i32.add (local.get 0) (i32.const 10)) (i32.gt_s (i32.add (local.get 0) (i32.const 10)) (local.get 2)))))))`,
      )
      .toBinary({}).buffer;
    dir = mkdtempSync(join(tmpdir(), 'sits-batch-plugin-'));
    writeFileSync(join(dir, 'grow.wasm'), wasm);
    engine = await startEngineLatencyDouble((n) => 40 * n);
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await engine.close();
  });
  const policy = (sha256: string): BatchPolicy => ({ start: 16, min: 1, max: 32, targetP99Ms: 100, plugin: { file: 'grow.wasm', sha256 } });
  // Generous deadlines: a loaded CI machine may start the plugin's worker thread slowly.
  const limits = { loadTimeoutMs: 60_000, callTimeoutMs: 10_000 };

  it('a loaded plugin starts and moves the size where the built-in would shrink it', async () => {
    const p = policy(sha(wasm));
    const plugins = loadJobPlugins({ batchSize: { wasm: p.plugin as NonNullable<BatchPolicy['plugin']> } }, { pluginDir: dir, limits });
    try {
      expect(plugins.condition.reason).toBe('PluginActive');
      const sizer = new LiveBatchSize(p, mix, plugins.batchSize as PluginCaller, 8);
      expect(sizer).toMatchObject({ size: 3, source: 'plugin' });
      const sizes = await drive(engine, 48, sizer);
      // Over the SLA the built-in would go 3 → 2 → 1; the plugin goes up by 10 a window.
      expect(sizes.slice(0, 4)).toEqual([3, 13, 23, 32]);
      expect(sizer.source).toBe('plugin');
    } finally {
      plugins.close();
    }
  });

  it('a rejected plugin leaves the built-in, and says why', async () => {
    const p = policy('0'.repeat(64));
    const plugins = loadJobPlugins({ batchSize: { wasm: p.plugin as NonNullable<BatchPolicy['plugin']> } }, { pluginDir: dir, limits });
    expect(plugins.batchSize).toBeUndefined();
    expect(plugins.condition).toMatchObject({
      status: 'False',
      reason: 'PluginRejected',
      message: expect.stringMatching(/^batchSize: plugin grow\.wasm rejected: sha256 [0-9a-f]{64} differs/),
    });
    const sizer = new LiveBatchSize(p, mix, plugins.batchSize, 8);
    expect(sizer).toMatchObject({ size: 16, source: 'builtin' });
    const sizes = await drive(engine, 32, sizer);
    expect(sizes[1]).toBe(11);
  });
});
