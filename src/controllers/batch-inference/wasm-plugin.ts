/**
 * WASM strategy plugins (seed 004 §2.4, issue 13 Deliver 9), the pure half: the ABI a plugin implements, the
 * structural checks on its bytes (imports, exports, memory limits), the validation of what it returns and the
 * fallback to the built-in strategy, one decision at a time. Running the module (a worker thread with a deadline,
 * ADR 0117) is the impure host's job (src/wasm/plugin-host.ts); it reaches this file only through `PluginCaller`.
 *
 * ABI version 1 (numbers only, so no allocator or string passing is needed on either side):
 *   sits_abi_version() -> i32                       must return 1
 *   batch_size(current i32, min i32, max i32, kvCapacityTokens f64, promptP50 f64, promptP90 f64, outputP90 f64,
 *              kvHitRate f64, observedP99Ms f64, slaP99Ms f64, memoryFraction f64) -> i32 | f64
 *       current = 0 and observedP99Ms = -1 ask for the starting size; otherwise it is one adjustment after a window.
 *       The answer must be an integer in [min, max].
 *   route(accuracyTolerance f64, slaClass i32 (0..3 = P0..P3), tier i32 (0 gold, 1 silver, 2 bronze, -1 none),
 *         fragmentation f64, outputTokensPerRecord f64 (-1 unknown)) -> i32
 *       low byte: route index in ROUTES; next byte: quantisation (0 none, 1 fp8, 2 int8), which the job's
 *       accuracyTolerance must allow (fp8 needs < 1, int8 needs < 0.95), as for the built-in.
 * Imports: only `env.abort(msg i32, file i32, line i32, column i32)` (AssemblyScript's) and `env.memory` (the host's,
 * capped); the module's own memory must declare a maximum within the cap. One memory in all, 32-bit and unshared:
 * a second one (multi-memory), memory64 or a shared memory is refused.
 */
import { percentiles } from '../../core/stats.ts';
import type { BatchBounds, Observation, TokenMix } from './batch-size.ts';
import type { Route, RouteDecision, RouteInput } from './routing.ts';

export const WASM_ABI_VERSION = 1;
export const ROUTES: readonly Route[] = ['gpu-exclusive', 'gpu-shared', 'gpu-fragments', 'cpu-elastic'];
const QUANT = [undefined, 'fp8', 'int8'] as const;
const SLA = ['P0', 'P1', 'P2', 'P3'] as const;
const TIERS = ['gold', 'silver', 'bronze'] as const;

export type StrategyKind = 'batchSize' | 'routing';
export const EXPORT_OF: Readonly<Record<StrategyKind, { readonly name: string; readonly params: number }>> = {
  batchSize: { name: 'batch_size', params: 11 },
  routing: { name: 'route', params: 5 },
};
/** The whole import surface: module.name → kind. */
export const ALLOWED_IMPORTS: Readonly<Record<string, 'function' | 'memory'>> = { 'env.abort': 'function', 'env.memory': 'memory' };
export const WASM_PAGE_BYTES = 65536;

export interface PluginLimits {
  /** Memory cap in 64 KiB pages (declared maximum, imported memory's maximum). */
  readonly maxMemoryPages: number;
  /** Wall-clock limit of one call, ms; past it the worker is terminated and the plugin disabled. */
  readonly callTimeoutMs: number;
  /** Wall-clock limit of starting the worker, compiling and instantiating (the start function), ms. */
  readonly loadTimeoutMs: number;
}
/** 1 MiB of memory; 1 s a decision (microseconds of arithmetic, but a busy node may not schedule the thread for a while); 5 s to start. */
export const DEFAULT_PLUGIN_LIMITS: PluginLimits = { maxMemoryPages: 16, callTimeoutMs: 1000, loadTimeoutMs: 5000 };

/** Parses the worker's --plugin-limits flag (a JSON subset of PluginLimits, positive integers); an error names the field. */
export function parsePluginLimits(text: string, flag = '--plugin-limits'): Partial<PluginLimits> | { error: string } {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    return { error: `${flag}: not JSON (${(e as Error).message})` };
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return { error: `${flag}: expected an object {maxMemoryPages, callTimeoutMs, loadTimeoutMs}` };
  const out: Record<string, number> = {};
  for (const [k, x] of Object.entries(v)) {
    if (!(k in DEFAULT_PLUGIN_LIMITS)) return { error: `${flag}: unknown field ${k} (known: ${Object.keys(DEFAULT_PLUGIN_LIMITS).join(', ')})` };
    if (typeof x !== 'number' || !Number.isInteger(x) || x < 1) return { error: `${flag}: ${k} must be a positive integer, got ${JSON.stringify(x)}` };
    out[k] = x;
  }
  return out as Partial<PluginLimits>;
}

export type Checked<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly reason: string };

export interface ModuleShape {
  readonly imports: readonly string[];
  readonly exports: readonly string[];
  /** Pages: declared (or imported) initial and maximum. */
  readonly memory?: { readonly initial: number; readonly maximum: number; readonly imported: boolean };
}

// ---------------------------------------------------------------------------------------------
// Structural checks, before any of the module's code runs
// ---------------------------------------------------------------------------------------------

class Reader {
  pos = 0;
  constructor(readonly b: Uint8Array) {}
  byte(): number {
    if (this.pos >= this.b.length) throw new Error(`unexpected end of module at byte ${this.pos}`);
    return this.b[this.pos++] as number;
  }
  u32(): number {
    let r = 0;
    for (let shift = 0; shift < 35; shift += 7) {
      const x = this.byte();
      r += (x & 0x7f) * 2 ** shift;
      if ((x & 0x80) === 0) return r;
    }
    throw new Error(`malformed LEB128 at byte ${this.pos}`);
  }
  name(): string {
    const n = this.u32();
    const s = new TextDecoder().decode(this.b.subarray(this.pos, this.pos + n));
    this.pos += n;
    return s;
  }
  limits(): { flags: number; initial: number; maximum?: number } {
    const flags = this.byte();
    const initial = this.u32();
    return (flags & 1) === 1 ? { flags, initial, maximum: this.u32() } : { flags, initial };
  }
}

type MemoryLimits = { initial: number; maximum?: number; imported: boolean };

/**
 * Every memory from the import (2) and memory (5) sections; the rest of the module is skipped section by
 * section. With multi-memory (on by default since Node 22) a module may import or declare several: each one
 * is read, so a second memory cannot slip past a cap that looked at the first (issue 36).
 */
function memoriesOf(bytes: Uint8Array): MemoryLimits[] {
  const r = new Reader(bytes);
  r.pos = 8;
  const mems: MemoryLimits[] = [];
  const memory = (imported: boolean): void => {
    // Limits flags: 1 has a maximum, 2 shared, 4 memory64 (whose limits are 64-bit: read only after the check).
    // The host's ABI hands 32-bit offsets in one private memory.
    const flags = r.b[r.pos] ?? 0;
    if ((flags & 4) !== 0) throw new PluginShapeError("a 64-bit memory (memory64): a plugin's memory is 32-bit");
    if ((flags & 2) !== 0) throw new PluginShapeError("a shared memory: a plugin's memory is its own");
    if ((flags & ~1) !== 0) throw new PluginShapeError(`memory limits flags 0x${flags.toString(16)} are unknown`);
    const { flags: _, ...l } = r.limits();
    mems.push({ ...l, imported });
  };
  while (r.pos < bytes.length) {
    const id = r.byte();
    const size = r.u32();
    const end = r.pos + size;
    if (id === 2) {
      for (let n = r.u32(); n > 0; n--) {
        r.name();
        r.name();
        const kind = r.byte();
        if (kind === 0) r.u32();
        else if (kind === 1) {
          r.byte();
          r.limits();
        } else if (kind === 2) memory(true);
        else if (kind === 3) r.pos += 2;
        else r.pos = end; // a newer kind (tags): the import list was already checked by name and kind
      }
    } else if (id === 5) for (let n = r.u32(); n > 0; n--) memory(false);
    r.pos = end;
  }
  return mems;
}

/** A memory the plugin host does not run: refused with its own reason (not "invalid WebAssembly"). */
class PluginShapeError extends Error {}

const describe = (e: unknown): string => (e instanceof Error ? e.message : String(e));

/**
 * Everything that can be checked without running the module: it is WebAssembly, it imports only what the host
 * defines, its memory is capped, it exports the ABI version and the strategies asked for.
 */
/** A strategy is a few hundred bytes; the check compiles on the caller's thread, so a huge module is refused first. */
export const MAX_MODULE_BYTES = 4 * 1024 * 1024;

export function inspectWasm(bytes: Uint8Array, strategies: readonly StrategyKind[], limits: Pick<PluginLimits, 'maxMemoryPages'>): Checked<ModuleShape> {
  if (bytes.length > MAX_MODULE_BYTES) return { ok: false, reason: `module is ${bytes.length} bytes, over the limit of ${MAX_MODULE_BYTES}` };
  if (bytes.length < 8 || bytes[0] !== 0 || bytes[1] !== 0x61 || bytes[2] !== 0x73 || bytes[3] !== 0x6d)
    return { ok: false, reason: 'not a WebAssembly module (no \\0asm magic)' };
  let mod: WebAssembly.Module;
  try {
    mod = new WebAssembly.Module(bytes as Uint8Array<ArrayBuffer>);
  } catch (e) {
    return { ok: false, reason: `invalid WebAssembly: ${describe(e)}` };
  }
  const imports = WebAssembly.Module.imports(mod);
  for (const i of imports) {
    const key = `${i.module}.${i.name}`;
    const allowed = ALLOWED_IMPORTS[key];
    if (allowed === undefined)
      return { ok: false, reason: `forbidden import ${key} (${i.kind}): a plugin may import only ${Object.keys(ALLOWED_IMPORTS).join(', ')}` };
    if (allowed !== i.kind) return { ok: false, reason: `import ${key} must be a ${allowed}, not a ${i.kind}` };
  }
  const exports = WebAssembly.Module.exports(mod);
  const fn = new Set(exports.filter((e) => e.kind === 'function').map((e) => e.name));
  if (!fn.has('sits_abi_version')) return { ok: false, reason: `missing export sits_abi_version (a function returning ${WASM_ABI_VERSION})` };
  for (const s of strategies)
    if (!fn.has(EXPORT_OF[s].name))
      return { ok: false, reason: `missing export ${EXPORT_OF[s].name} (the ${s} strategy); the module exports ${[...fn].join(', ') || 'no functions'}` };
  let mems: MemoryLimits[];
  try {
    mems = memoriesOf(bytes);
  } catch (e) {
    return { ok: false, reason: e instanceof PluginShapeError ? `the module has ${e.message}` : `invalid WebAssembly: ${describe(e)}` };
  }
  if (mems.length > 1)
    return {
      ok: false,
      reason: `the module has ${mems.length} memories (${mems.filter((m) => m.imported).length} imported, ${mems.filter((m) => !m.imported).length} declared): a plugin may have one, capped at ${limits.maxMemoryPages} pages`,
    };
  const mem = mems[0];
  const cap = limits.maxMemoryPages;
  if (mem !== undefined) {
    const where = mem.imported ? 'imported memory' : 'memory';
    if (mem.initial > cap)
      return { ok: false, reason: `${where} starts at ${mem.initial} pages, over the cap of ${cap} pages (${(cap * WASM_PAGE_BYTES) / 1024} KiB)` };
    if (!mem.imported && mem.maximum === undefined)
      return { ok: false, reason: `memory declares no maximum: declare one of at most ${cap} pages (asc --maximumMemory ${cap}) or import env.memory` };
    if (!mem.imported && (mem.maximum as number) > cap)
      return { ok: false, reason: `memory maximum ${mem.maximum} pages is over the cap of ${cap} pages (${(cap * WASM_PAGE_BYTES) / 1024} KiB)` };
  }
  const shape: ModuleShape = {
    imports: imports.map((i) => `${i.module}.${i.name}`),
    exports: exports.map((e) => e.name),
    ...(mem === undefined ? {} : { memory: { initial: mem.initial, maximum: mem.imported ? cap : (mem.maximum as number), imported: mem.imported } }),
  };
  return { ok: true, value: shape };
}

// ---------------------------------------------------------------------------------------------
// Calls, validation and fallback
// ---------------------------------------------------------------------------------------------

/** What the host offers the pure side: one call, which fails with a reason instead of throwing. */
export interface PluginCaller {
  readonly name: string;
  call(exportName: string, args: readonly number[]): Checked<number>;
}

export interface BatchSizeInputs {
  /** 0 asks for the starting size. */
  readonly current: number;
  readonly min: number;
  readonly max: number;
  /** KV tokens free accelerator memory holds (the built-in's kvCapacityTokens). */
  readonly kvCapacityTokens: number;
  readonly promptP50: number;
  readonly promptP90: number;
  readonly outputP90: number;
  readonly kvHitRate: number;
  /** -1 before any window. */
  readonly observedP99Ms: number;
  readonly slaP99Ms: number;
  readonly memoryFraction: number;
}

/** The plugin's inputs from the built-in's: the start decision without `o`, one window's adjustment with it. */
export function batchSizeInputs(
  kvCapacityTokens: number,
  mix: TokenMix,
  kvHitRate: number,
  bounds: BatchBounds,
  slaP99Ms: number,
  current = 0,
  o?: Observation,
): BatchSizeInputs {
  const [p50, p90] = percentiles(mix.promptTokens, [50, 90]);
  const [o90] = percentiles(mix.outputTokens, [90]);
  return {
    current,
    min: bounds.min,
    max: bounds.max,
    kvCapacityTokens,
    promptP50: p50 ?? 0,
    promptP90: p90 ?? 0,
    outputP90: o90 ?? 0,
    kvHitRate,
    observedP99Ms: o?.p99Ms ?? -1,
    slaP99Ms,
    memoryFraction: o?.memoryFraction ?? 0,
  };
}

export function batchSizeArgs(i: BatchSizeInputs): number[] {
  return [i.current, i.min, i.max, i.kvCapacityTokens, i.promptP50, i.promptP90, i.outputP90, i.kvHitRate, i.observedP99Ms, i.slaP99Ms, i.memoryFraction];
}

export function validateBatchSize(v: number, i: BatchSizeInputs): Checked<number> {
  if (!Number.isFinite(v)) return { ok: false, reason: `batch_size returned ${v}, not a finite number` };
  if (!Number.isInteger(v)) return { ok: false, reason: `batch_size returned ${v}, not an integer` };
  if (v < i.min || v > i.max) return { ok: false, reason: `batch_size returned ${v}, outside [${i.min}, ${i.max}]` };
  return { ok: true, value: v };
}

/** One strategy decision: the plugin's when it answered well, else the built-in's with the reason. */
export interface Decided<T> {
  readonly value: T;
  readonly source: 'plugin' | 'builtin';
  readonly reason?: string;
}

export function decideBatchSize(plugin: PluginCaller | undefined, i: BatchSizeInputs, builtin: number): Decided<number> {
  if (plugin === undefined) return { value: builtin, source: 'builtin' };
  const r = plugin.call(EXPORT_OF.batchSize.name, batchSizeArgs(i));
  const v = r.ok ? validateBatchSize(r.value, i) : r;
  return v.ok
    ? { value: v.value, source: 'plugin' }
    : { value: builtin, source: 'builtin', reason: `plugin ${plugin.name}: ${v.reason}; built-in batch size ${builtin} used` };
}

export interface RoutePluginInput extends RouteInput {
  readonly tier?: (typeof TIERS)[number];
}

export function routeArgs(i: RoutePluginInput): number[] {
  return [
    i.accuracyTolerance ?? 1,
    SLA.indexOf(i.slaClass),
    i.tier === undefined ? -1 : TIERS.indexOf(i.tier),
    i.fragmentation,
    i.profile?.outputTokensPerRecord ?? -1,
  ];
}

export function validateRoute(code: number, i: RoutePluginInput): Checked<{ route: Route; quantization?: 'fp8' | 'int8' }> {
  if (!Number.isInteger(code) || code < 0 || code > 0xffff)
    return { ok: false, reason: `route returned ${code}, not a route code (route index + 256 × quantisation)` };
  const route = ROUTES[code & 0xff];
  if (route === undefined) return { ok: false, reason: `route returned route index ${code & 0xff}, outside 0..${ROUTES.length - 1}` };
  const qi = code >> 8;
  if (qi >= QUANT.length) return { ok: false, reason: `route returned quantisation ${qi}, outside 0..${QUANT.length - 1}` };
  const quantization = QUANT[qi];
  const d = i.accuracyTolerance ?? 1;
  // The job's precision tolerance is a promise to its user: no strategy may quantise further than it allows.
  if ((quantization === 'fp8' && d >= 1) || (quantization === 'int8' && d >= 0.95))
    return { ok: false, reason: `route chose ${quantization}, which accuracyTolerance ${d} does not allow` };
  return { ok: true, value: quantization === undefined ? { route } : { route, quantization } };
}

export function decideRoutePlugin(
  plugin: PluginCaller | undefined,
  i: RoutePluginInput,
  builtin: RouteDecision,
): RouteDecision & { readonly source: 'plugin' | 'builtin' } {
  if (plugin === undefined) return { ...builtin, source: 'builtin' };
  const r = plugin.call(EXPORT_OF.routing.name, routeArgs(i));
  const v = r.ok ? validateRoute(r.value, i) : r;
  if (!v.ok)
    return { ...builtin, source: 'builtin', reasons: [...builtin.reasons, `plugin ${plugin.name}: ${v.reason}; built-in route ${builtin.route} used`] };
  return {
    ...v.value,
    source: 'plugin',
    reasons: [`plugin ${plugin.name}: route ${v.value.route}${v.value.quantization === undefined ? '' : ` with ${v.value.quantization}`}`],
  };
}

/** The inputs of the self-test a plugin must pass at load (an ordinary decision, so a plugin that traps or loops is refused up front). */
export const PROBE_BATCH: BatchSizeInputs = {
  current: 0,
  min: 1,
  max: 256,
  kvCapacityTokens: 200_000,
  promptP50: 500,
  promptP90: 1500,
  outputP90: 300,
  kvHitRate: 0.2,
  observedP99Ms: -1,
  slaP99Ms: 20_000,
  memoryFraction: 0,
};
export const PROBE_ROUTE: RoutePluginInput = { accuracyTolerance: 1, slaClass: 'P2', fragmentation: 0.1 };

/** Runs the self-test of each strategy through `caller`; the first failure is the reason the plugin is refused. */
export function selfTest(caller: PluginCaller, strategies: readonly StrategyKind[]): Checked<true> {
  const v = caller.call('sits_abi_version', []);
  if (!v.ok) return { ok: false, reason: `sits_abi_version: ${v.reason}` };
  if (v.value !== WASM_ABI_VERSION) return { ok: false, reason: `sits_abi_version returned ${v.value}; this host speaks ABI ${WASM_ABI_VERSION}` };
  for (const s of strategies) {
    const r =
      s === 'batchSize' ? caller.call(EXPORT_OF.batchSize.name, batchSizeArgs(PROBE_BATCH)) : caller.call(EXPORT_OF.routing.name, routeArgs(PROBE_ROUTE));
    const ok = !r.ok ? r : s === 'batchSize' ? validateBatchSize(r.value, PROBE_BATCH) : validateRoute(r.value, PROBE_ROUTE);
    if (!ok.ok) return { ok: false, reason: `self-test of ${EXPORT_OF[s].name}: ${ok.reason}` };
  }
  return { ok: true, value: true };
}

// ---------------------------------------------------------------------------------------------
// What the controller shows
// ---------------------------------------------------------------------------------------------

export interface PluginTally {
  readonly plugin: number;
  readonly builtin: number;
  readonly lastFallback?: string;
}

/** Counts a decision; a fallback's reason becomes the last one shown. */
export function tally(t: PluginTally, source: 'plugin' | 'builtin', reason?: string): PluginTally {
  if (source === 'plugin') return { ...t, plugin: t.plugin + 1 };
  return { ...t, builtin: t.builtin + 1, ...(reason === undefined ? {} : { lastFallback: reason }) };
}

export type PluginState =
  | { readonly kind: 'none' }
  | { readonly kind: 'loaded'; readonly name: string; readonly tally?: PluginTally }
  | { readonly kind: 'rejected'; readonly name: string; readonly reason: string }
  | { readonly kind: 'disabled'; readonly name: string; readonly reason: string; readonly tally?: PluginTally };

export interface PluginConditionValue {
  readonly type: 'StrategyPlugin';
  readonly status: 'True' | 'False';
  readonly reason: 'NoPlugin' | 'PluginActive' | 'PluginRejected' | 'PluginDisabled';
  readonly message: string;
}

/** The StrategyPlugin condition for status: True while the plugin decides, False when the built-in does (and why). */
export function pluginCondition(s: PluginState): PluginConditionValue {
  const counts = (t?: PluginTally) =>
    t === undefined
      ? ''
      : `; ${t.plugin} decisions by the plugin, ${t.builtin} by the built-in${t.lastFallback === undefined ? '' : ` (last: ${t.lastFallback})`}`;
  switch (s.kind) {
    case 'none':
      return { type: 'StrategyPlugin', status: 'False', reason: 'NoPlugin', message: 'built-in strategies' };
    case 'loaded':
      return { type: 'StrategyPlugin', status: 'True', reason: 'PluginActive', message: `plugin ${s.name} loaded${counts(s.tally)}` };
    case 'rejected':
      return { type: 'StrategyPlugin', status: 'False', reason: 'PluginRejected', message: `plugin ${s.name} rejected: ${s.reason}; built-in strategies used` };
    case 'disabled':
      return {
        type: 'StrategyPlugin',
        status: 'False',
        reason: 'PluginDisabled',
        message: `plugin ${s.name} disabled: ${s.reason}; built-in strategies used${counts(s.tally)}`,
      };
  }
}

const RANK: Readonly<Record<PluginConditionValue['reason'], number>> = { NoPlugin: 0, PluginActive: 1, PluginDisabled: 2, PluginRejected: 3 };

/** One StrategyPlugin condition for a job's two strategies: the worse of the two decides status and reason. */
export function jobPluginCondition(states: Readonly<Record<StrategyKind, PluginState>>): PluginConditionValue {
  const named = (Object.entries(states) as [StrategyKind, PluginState][])
    .filter(([, s]) => s.kind !== 'none')
    .map(([k, s]) => [k, pluginCondition(s)] as const);
  if (named.length === 0) return pluginCondition({ kind: 'none' });
  const worst = named.reduce((a, b) => (RANK[b[1].reason] > RANK[a[1].reason] ? b : a))[1];
  return { ...worst, status: worst.reason === 'PluginActive' ? 'True' : 'False', message: named.map(([k, c]) => `${k}: ${c.message}`).join('; ') };
}
