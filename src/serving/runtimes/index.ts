/** The runtime registry: one entry per file of this folder, keyed by the spec's runtime name. */
import type { InferenceRuntime } from '../../api/schema/inference-service.ts';
import type { RuntimeDefinition } from '../runtime.ts';
import { LLAMACPP } from './llamacpp.ts';
import { TGI } from './tgi.ts';
import { TRITON } from './triton.ts';
import { VLLM } from './vllm.ts';

export const RUNTIMES: Readonly<Record<InferenceRuntime, RuntimeDefinition>> = { vllm: VLLM, tgi: TGI, triton: TRITON, llamacpp: LLAMACPP };

/** The runtime of that name, or undefined for a name the registry does not know (a clear condition upstream). */
export function runtimeFor(name: string): RuntimeDefinition | undefined {
  return Object.hasOwn(RUNTIMES, name) ? RUNTIMES[name as InferenceRuntime] : undefined;
}
