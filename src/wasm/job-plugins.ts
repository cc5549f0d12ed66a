/**
 * A BatchInferenceJob's strategy plugins from its spec.strategy (issue 13 Deliver 9): the entry point for the live
 * controller. Each named module is read (a file under the controller's plugin directory, or a ConfigMap key the
 * caller has fetched), checked against its sha256 and loaded; one that is refused leaves that strategy to the
 * built-in, and the StrategyPlugin condition says which plugin decides and why not.
 */
import { resolve, sep } from 'node:path';
import { readFileSync } from 'node:fs';
import type { WasmModuleRef } from '../api/schema/batch-inference-job.ts';
import type { PluginConditionValue, PluginLimits, PluginState, StrategyKind } from '../controllers/batch-inference/wasm-plugin.ts';
import { jobPluginCondition } from '../controllers/batch-inference/wasm-plugin.ts';
import { WasmPlugin } from './plugin-host.ts';

export interface PluginSources {
  /** Where spec.strategy.*.wasm.file is looked up; unset: file references are refused. */
  readonly pluginDir?: string;
  /** The bytes of key `key` of the ConfigMap `name` in the job's namespace (fetched, or mounted by the kubelet); undefined when absent. */
  readonly configMapBytes?: (name: string, key: string) => Uint8Array | undefined;
  readonly limits?: Partial<PluginLimits>;
}

export interface JobPlugins {
  readonly batchSize?: WasmPlugin;
  readonly routing?: WasmPlugin;
  readonly states: Readonly<Record<StrategyKind, PluginState>>;
  readonly condition: PluginConditionValue;
  close(): void;
}

export type JobStrategy = { readonly batchSize?: { readonly wasm: WasmModuleRef }; readonly routing?: { readonly wasm: WasmModuleRef } };

const refName = (r: WasmModuleRef): string => (r.file !== undefined ? r.file : `configmap/${r.configMap?.name}/${r.configMap?.key}`);

function bytesOf(r: WasmModuleRef, src: PluginSources): { ok: true; bytes: Uint8Array } | { ok: false; reason: string } {
  if (r.configMap !== undefined) {
    const b = src.configMapBytes?.(r.configMap.name, r.configMap.key);
    return b === undefined ? { ok: false, reason: `ConfigMap ${r.configMap.name} does not exist or has no key ${r.configMap.key}` } : { ok: true, bytes: b };
  }
  if (r.file === undefined) return { ok: false, reason: 'names neither configMap nor file' };
  if (src.pluginDir === undefined) return { ok: false, reason: "file references need the controller's plugin directory, and none is configured" };
  const dir = resolve(src.pluginDir);
  const path = resolve(dir, r.file);
  // The CRD pattern already forbids .. segments; the check stays here for callers that skip validation.
  if (!path.startsWith(dir + sep)) return { ok: false, reason: `file ${r.file} is outside the plugin directory` };
  try {
    return { ok: true, bytes: readFileSync(path) };
  } catch (e) {
    return { ok: false, reason: `cannot read ${path}: ${e instanceof Error ? e.message : String(e)}` };
  }
}

export function loadJobPlugins(strategy: JobStrategy | undefined, src: PluginSources): JobPlugins {
  const loaded: Partial<Record<StrategyKind, WasmPlugin>> = {};
  const states: Record<StrategyKind, PluginState> = { batchSize: { kind: 'none' }, routing: { kind: 'none' } };
  for (const kind of ['batchSize', 'routing'] as const) {
    const ref = strategy?.[kind]?.wasm;
    if (ref === undefined) continue;
    const name = refName(ref);
    const b = bytesOf(ref, src);
    const p = b.ok
      ? WasmPlugin.load(b.bytes, { name, strategies: [kind], sha256: ref.sha256, ...(src.limits === undefined ? {} : { limits: src.limits }) })
      : { ok: false as const, reason: `plugin ${name}: ${b.reason}` };
    if (p.ok) {
      loaded[kind] = p.value;
      states[kind] = { kind: 'loaded', name };
    } else states[kind] = { kind: 'rejected', name, reason: p.reason.replace(`plugin ${name}: `, '') };
  }
  return {
    ...loaded,
    states,
    condition: jobPluginCondition(states),
    close: () => {
      for (const p of Object.values(loaded)) p.close();
    },
  };
}
