import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { benchServing, DEFAULT_SERVING_TRACE } from '../../bench/serving/run.ts';
import { TraceError } from '../../serving/sim/trace.ts';
import { CliError } from '../errors.ts';
import { table } from '../format.ts';
import { intOption, numberOption } from '../options.ts';

export function registerBenchServing(bench: Command): void {
  bench
    .command('serving')
    .description(
      'LLM serving autoscalers on the Azure LLM trace (simulated vLLM on H100): static, KEDA, KPA-like concurrency, SITS tokens; then SITS sharing GPUs with elastic training',
    )
    .option('--trace <csv>', 'a CSV in the Azure LLM trace format (TIMESTAMP,ContextTokens,GeneratedTokens)', DEFAULT_SERVING_TRACE)
    .option('--slo-ttft <s>', 'TTFT SLO in seconds', numberOption('--slo-ttft', 0.01, 600), 1)
    .option(
      '--tune-fraction <f>',
      'the first part of the trace (by time) the policies are tuned on; the rest is reported',
      numberOption('--tune-fraction', 0.05, 0.95),
      0.4,
    )
    .option('--max-replicas <n>', 'replica bound of every autoscaler', intOption('--max-replicas', 1, 1000), 16)
    .option('--seed <n>', 'seed (replica start-up jitter)', intOption('--seed'), 1)
    .requiredOption('--json <file>', 'write {sloTtftSec, policies: {static, keda, concurrency, sits}, sharing} here')
    .option('--details <file>', 'also write the tuning runs, the chosen constants, peaks and the goal check here')
    .action((o: { trace: string; sloTtft: number; tuneFraction: number; maxReplicas: number; seed: number; json: string; details?: string }) => {
      const tty = process.stderr.isTTY;
      let r: ReturnType<typeof benchServing>;
      try {
        r = benchServing(o.trace, {
          seed: o.seed,
          sloTtftSec: o.sloTtft,
          tuneFraction: o.tuneFraction,
          maxReplicas: o.maxReplicas,
          ...(tty ? { onProgress: (m: string) => process.stderr.write(`\r\x1b[K${m}`) } : {}),
        });
      } catch (e) {
        if (e instanceof TraceError) throw new CliError(e.message);
        throw e;
      }
      if (tty) process.stderr.write('\r\x1b[K');
      writeFileSync(o.json, `${JSON.stringify(r.json, null, 2)}\n`);
      if (o.details !== undefined) writeFileSync(o.details, `${JSON.stringify(r.details, null, 2)}\n`);
      const rows = Object.entries(r.json.policies).map(([k, p]) => [
        k,
        p.sloAttainmentPct.toFixed(2),
        p.gpuHours.toFixed(3),
        p.ttftSec.p50,
        p.ttftSec.p99,
        p.itlSec.p99,
      ]);
      const s = r.json.sharing;
      const g = r.details.goal;
      const b = r.details.bound;
      const hold = b.reactivePeakHold.filter((h) => h.withinPct >= 99).sort((x, y) => x.gpuHours - y.gpuHours)[0];
      process.stdout.write(
        `${r.details.requests} requests, tuned on the first ${r.details.splitSec} s of ${r.details.traceSpanSec} s, reported on ${r.details.reportedRequests}; TTFT SLO ${r.json.sloTtftSec} s\n\n` +
          `${table(['policy', 'within SLO %', 'GPU-h', 'TTFT p50 s', 'TTFT p99 s', 'ITL p99 s'], rows)}\n\n` +
          `shared with elastic training: ${s.sloAttainmentPct} % within SLO, training lent ${s.trainingGpuHoursLent} GPU-h, lost ${s.trainingGpuHoursLost} GPU-h\n` +
          `goal: SITS ≥ 99 % ${g.sitsMeetsSlo ? 'yes' : 'NO'}, ${g.sitsGpuHoursVsStatic}× static GPU-h (≤ 0.6 ${g.sitsGpuHoursVsStatic <= 0.6 ? 'yes' : 'NO'}), ` +
          `fewer GPU-h at equal or better SLO than keda ${g.sitsBeatsEachAutoscaler.keda ? 'yes' : 'NO'}, concurrency ${g.sitsBeatsEachAutoscaler.concurrency ? 'yes' : 'NO'}\n` +
          `SITS as shipped (an InferenceService's defaults, not tuned on the trace): ${r.details.sitsDefaults.sloAttainmentPct} % within SLO, ${r.details.sitsDefaults.vsStatic}× static GPU-h\n` +
          `bound: static sized on the reported part alone ${b.hindsightStatic.replicas} replicas (${b.hindsightStatic.vsStatic}×), ` +
          `best reactive peak-hold ≥ 99 % ${hold === undefined ? 'none' : `${hold.vsStatic}× (hold ${hold.holdSec} s; ${hold.tunePartWithinPct} % on the tuning part)`}, ` +
          `oracle with foresight ${b.oracle.vsStatic}× (${b.oracle.sloAttainmentPct} %)\n`,
      );
    });
}
