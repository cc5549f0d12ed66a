/** The impure edge of `sits bench serving`: reads the trace file, runs the pure bench, returns its results. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAzureTrace } from '../../serving/sim/trace.ts';
import { runServingBench, type ServingBenchDetails, type ServingBenchJson, type ServingBenchOptions } from './serving-bench.ts';

export const DEFAULT_SERVING_TRACE = join(import.meta.dirname, '../../../../shared/traces/azure-llm-2023/AzureLLMInferenceTrace_code.csv');

export function benchServing(trace: string, o: ServingBenchOptions): { json: ServingBenchJson; details: ServingBenchDetails } {
  return runServingBench(parseAzureTrace(readFileSync(trace, 'utf8'), trace), o);
}
