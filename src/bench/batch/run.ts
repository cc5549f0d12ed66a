/** The impure edge of `sits bench batch`: reads the trace file and runs the pure bench. */
import { readFileSync } from 'node:fs';
import { parseAzureTrace } from '../../serving/sim/trace.ts';
import type { BatchBenchOptions } from './batch-bench.ts';
import { runBatchBench } from './batch-bench.ts';

export { DEFAULT_SERVING_TRACE as DEFAULT_BATCH_TRACE } from '../serving/run.ts';

export function benchBatch(trace: string, o: Partial<BatchBenchOptions>): ReturnType<typeof runBatchBench> {
  return runBatchBench(parseAzureTrace(readFileSync(trace, 'utf8'), trace), o);
}
