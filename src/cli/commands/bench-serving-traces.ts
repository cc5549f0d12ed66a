import { readFileSync, writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { DEFAULT_SERVING_TRACE } from '../../bench/serving/run.ts';
import { runServingTraces, traceVariants } from '../../bench/serving/trace-variants.ts';
import { parseAzureTrace, TraceError } from '../../serving/sim/trace.ts';
import { CliError } from '../errors.ts';
import { table } from '../format.ts';
import { intOption, numberOption } from '../options.ts';

const NAMES = traceVariants([]).map((v) => v.name);

export function registerBenchServingTraces(bench: Command): void {
  bench
    .command('serving-traces')
    .description(`the serving bench (static vs SITS tokens, same protocol as \`bench serving\`) on variants of the trace: ${NAMES.join(', ')}`)
    .option('--trace <csv>', 'a CSV in the Azure LLM trace format (TIMESTAMP,ContextTokens,GeneratedTokens)', DEFAULT_SERVING_TRACE)
    .option('--variants <names>', `comma-separated subset of ${NAMES.join(',')}`)
    .option('--slo-ttft <s>', 'TTFT SLO in seconds', numberOption('--slo-ttft', 0.01, 600), 1)
    .option(
      '--tune-fraction <f>',
      'the first part of each variant (by time) the policies are tuned on; the rest is reported',
      numberOption('--tune-fraction', 0.05, 0.95),
      0.4,
    )
    .option('--max-replicas <n>', 'replica bound of every autoscaler', intOption('--max-replicas', 1, 1000), 16)
    .option('--seed <n>', 'seed (replica start-up jitter)', intOption('--seed'), 1)
    .requiredOption('--json <file>', 'write {sloTtftSec, tuneFraction, seed, variants: [{name, static, sits, sitsGpuHoursVsStatic, goalMet, …}]} here')
    .action((o: { trace: string; variants?: string; sloTtft: number; tuneFraction: number; maxReplicas: number; seed: number; json: string }) => {
      const only = o.variants?.split(',').map((s) => s.trim());
      const unknown = only?.filter((n) => !NAMES.includes(n)) ?? [];
      if (unknown.length > 0) throw new CliError(`--variants: unknown ${unknown.join(', ')} (known: ${NAMES.join(', ')})`);
      const tty = process.stderr.isTTY;
      let r: ReturnType<typeof runServingTraces>;
      try {
        r = runServingTraces(parseAzureTrace(readFileSync(o.trace, 'utf8'), o.trace), {
          seed: o.seed,
          sloTtftSec: o.sloTtft,
          tuneFraction: o.tuneFraction,
          maxReplicas: o.maxReplicas,
          ...(only === undefined ? {} : { only }),
          ...(tty ? { onProgress: (m: string) => process.stderr.write(`\r\x1b[K${m}`) } : {}),
        });
      } catch (e) {
        if (e instanceof TraceError) throw new CliError(e.message);
        throw e;
      }
      if (tty) process.stderr.write('\r\x1b[K');
      writeFileSync(o.json, `${JSON.stringify(r, null, 2)}\n`);
      const rows = r.variants.map((v) => [
        v.name,
        v.requests,
        v.staticReplicas,
        v.sits.sloAttainmentPct.toFixed(2),
        v.sitsGpuHoursVsStatic.toFixed(3),
        v.sitsPeakReplicas,
        v.hindsightStaticVsStatic.toFixed(3),
        v.reactiveBoundWithinPct.toFixed(2),
        v.goalMet ? 'yes' : 'NO',
        v.sitsDefaults.sloAttainmentPct.toFixed(2),
        v.sitsDefaultsVsStatic.toFixed(3),
        v.defaultsGoalMet ? 'yes' : 'NO',
      ]);
      process.stdout.write(
        `tuned on the first ${r.tuneFraction} of each variant, reported on the rest; TTFT SLO ${r.sloTtftSec} s; goal: SITS ≥ 99 % within the SLO at ≤ 1.0× static GPU-h; reactive bound: the most a policy that knows every past need and holds its peaks up to 20 min reaches; defaults: SITS as shipped (an InferenceService's defaults), not tuned\n\n` +
          `${table(['variant', 'requests', 'static n', 'SITS within SLO %', 'SITS × static', 'SITS peak', 'hindsight static ×', 'reactive bound %', 'goal', 'defaults within SLO %', 'defaults × static', 'goal (defaults)'], rows)}\n`,
      );
    });
}
