/**
 * The WASM strategy plugin host (issue 13 Deliver 9, ADR 0117). A plugin runs in its own worker thread; the caller
 * stays synchronous (the batch-size and routing strategies are called from synchronous loops): it posts the call,
 * blocks in Atomics.wait on a shared flag with the call's deadline, and reads the answer with receiveMessageOnPort.
 * Node has no fuel metering, so the deadline is the time limit: past it the worker is terminated (V8 interrupts a
 * wasm loop) and the plugin disabled for good, since a module that looped once cannot be trusted with the next
 * decision. The memory cap and the import surface are checked before any of the module's code runs
 * (controllers/batch-inference/wasm-plugin.ts); the worker's own heap is capped with resourceLimits.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { MessageChannel, receiveMessageOnPort, Worker } from 'node:worker_threads';
import type { MessagePort } from 'node:worker_threads';
import type { Checked, PluginCaller, PluginLimits, StrategyKind } from '../controllers/batch-inference/wasm-plugin.ts';
import { DEFAULT_PLUGIN_LIMITS, EXPORT_OF, inspectWasm, selfTest } from '../controllers/batch-inference/wasm-plugin.ts';

export interface LoadOptions {
  /** How the plugin is named in every message (its file or ConfigMap key). */
  readonly name: string;
  readonly strategies: readonly StrategyKind[];
  readonly limits?: Partial<PluginLimits>;
  /** Lowercase hex SHA-256 the bytes must have (spec.strategy.*.wasm.sha256). */
  readonly sha256?: string;
}

type Answer = { ok: true; value?: number; arity?: Record<string, number> } | { ok: false; reason: string };

export class WasmPlugin implements PluginCaller {
  private disabledReason: string | undefined;
  private constructor(
    readonly name: string,
    readonly limits: PluginLimits,
    private readonly worker: Worker,
    private readonly port: MessagePort,
    private readonly flag: Int32Array,
  ) {}

  /** Why the plugin stopped deciding (a time limit hit), or undefined while it decides. */
  get disabled(): string | undefined {
    return this.disabledReason;
  }

  static load(bytes: Uint8Array, o: LoadOptions): Checked<WasmPlugin> {
    const limits = { ...DEFAULT_PLUGIN_LIMITS, ...o.limits };
    const fail = (reason: string): Checked<WasmPlugin> => ({ ok: false, reason: `plugin ${o.name}: ${reason}` });
    if (o.sha256 !== undefined) {
      const got = createHash('sha256').update(bytes).digest('hex');
      if (got !== o.sha256.toLowerCase()) return fail(`sha256 ${got} differs from the ${o.sha256} the job names`);
    }
    const shape = inspectWasm(bytes, o.strategies, limits);
    if (!shape.ok) return fail(shape.reason);
    const flag = new Int32Array(new SharedArrayBuffer(4));
    const { port1, port2 } = new MessageChannel();
    const worker = new Worker(new URL('./plugin-worker.mjs', import.meta.url), {
      workerData: {
        bytes: Uint8Array.from(bytes),
        flag: flag.buffer,
        port: port2,
        maxMemoryPages: limits.maxMemoryPages,
        memoryInitial: shape.value.memory?.imported === true ? shape.value.memory.initial : undefined,
      },
      transferList: [port2],
      // The thread runs plain JS and needs none of the parent's preloads. Inherited, `node --import tsx --import x.ts`
      // (how the dev kubelet starts a batch worker) left the thread silent while the parent waited in Atomics.wait:
      // every plugin was refused at load (measured on Node 20.20).
      execArgv: [],
      // The module's linear memory is capped by its declared maximum; this caps the JS heap of the thread around it.
      resourceLimits: { maxOldGenerationSizeMb: 32, maxYoungGenerationSizeMb: 8, stackSizeMb: 1 },
    });
    // A worker that dies (its heap limit, a crash) raises 'error' on this object; unheard, that would crash the
    // process. The death itself shows as the missed deadline of the call in flight.
    worker.on('error', () => undefined);
    worker.unref();
    const p = new WasmPlugin(o.name, limits, worker, port1, flag);
    const ready = p.await(limits.loadTimeoutMs, 'loading');
    if (!ready.ok) {
      p.close();
      return fail(ready.reason);
    }
    for (const s of o.strategies) {
      const want = EXPORT_OF[s];
      const got = ready.arity?.[want.name];
      if (got !== want.params) {
        p.close();
        return fail(`export ${want.name} takes ${got} parameters; ABI 1 has ${want.params}`);
      }
    }
    // The self-test is ordinary decisions, under the call limit.
    const t = selfTest(p, o.strategies);
    if (!t.ok) {
      p.close();
      return fail(t.reason);
    }
    return { ok: true, value: p };
  }

  static loadFile(path: string, o: Omit<LoadOptions, 'name'> & { name?: string }): Checked<WasmPlugin> {
    let bytes: Uint8Array;
    try {
      bytes = readFileSync(path);
    } catch (e) {
      return { ok: false, reason: `plugin ${path}: cannot read: ${e instanceof Error ? e.message : String(e)}` };
    }
    return WasmPlugin.load(bytes, { ...o, name: o.name ?? path });
  }

  call(exportName: string, args: readonly number[]): Checked<number> {
    return this.roundTrip(exportName, args, this.limits.callTimeoutMs);
  }

  close(): void {
    this.port.close();
    void this.worker.terminate();
  }

  private roundTrip(name: string, args: readonly number[], timeoutMs: number): Checked<number> {
    if (this.disabledReason !== undefined) return { ok: false, reason: `disabled (${this.disabledReason})` };
    Atomics.store(this.flag, 0, 0);
    this.port.postMessage({ name, args: [...args] });
    const a = this.await(timeoutMs, name);
    if (!a.ok) return a;
    return typeof a.value === 'number' ? { ok: true, value: a.value } : { ok: false, reason: `${name} gave no value` };
  }

  private await(timeoutMs: number, what: string): Answer {
    if (Atomics.wait(this.flag, 0, 0, timeoutMs) === 'timed-out') {
      this.disabledReason = `${what} gave no answer within ${timeoutMs} ms (an endless loop, or the worker died); worker terminated`;
      this.close();
      return { ok: false, reason: this.disabledReason };
    }
    const m = receiveMessageOnPort(this.port);
    if (m === undefined) return { ok: false, reason: `${what}: the worker flagged an answer it did not send` };
    return m.message as Answer;
  }
}
