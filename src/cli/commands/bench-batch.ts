import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { measureControlPlane, type ControlPlaneMeasurement } from '../../kits/batch-control-plane.ts';
import { benchBatch, DEFAULT_BATCH_TRACE } from '../../bench/batch/run.ts';
import { TraceError } from '../../serving/sim/trace.ts';
import { WasmPlugin } from '../../wasm/plugin-host.ts';
import { CliError } from '../errors.ts';
import { table } from '../format.ts';
import { intOption, numberOption } from '../options.ts';

export function registerBenchBatch(bench: Command): void {
  bench
    .command('batch')
    .description(
      "offline batch inference on the Azure LLM trace's token mix (simulated vLLM on H100): static batching (KServe 32 / 5000 ms), Ray-Data-like fixed batches, SITS; tenant shares; faults",
    )
    .option('--trace <csv>', 'a CSV in the Azure LLM trace format (TIMESTAMP,ContextTokens,GeneratedTokens)', DEFAULT_BATCH_TRACE)
    .option('--gpus <n>', 'GPUs (one engine each)', intOption('--gpus', 1, 256), 4)
    .option('--sla-p99-ms <ms>', "the job's p99 latency SLA that SITS's AIMD keeps", numberOption('--sla-p99-ms', 1, 3_600_000), 5000)
    .option('--kv-hit-rate <f>', 'share of prompt tokens reused from the KV cache, for the start batch size', numberOption('--kv-hit-rate', 0, 1), 0)
    .option('--records <n>', 'only the first n records of the trace', intOption('--records', 1, 10_000_000))
    .requiredOption('--json <file>', 'write {static, fixed, sits, tenants, faults, controlPlane} here')
    .option('--details <file>', 'also write makespans, batch sizes, the SLA frontier, the fault plan and events, and the goal check here')
    .option(
      '--fault-seeds <n>',
      'also run the faulted job under n held-out random fault plans (seeds 1..n) and report each makespan ratio',
      intOption('--fault-seeds', 0, 1000),
      0,
    )
    .option(
      '--control-plane',
      "also measure controlPlane (minutes): one job on a real kube-apiserver + etcd (SITS_K8S_BIN and SITS_KCM_BIN, else built by tools/k8s/ensure*.mjs) with the SITS scheduler, controller and workers, against a controller that writes status on every record, from the apiserver's /metrics",
    )
    .option('--control-plane-records <n>', 'records of the --control-plane job', intOption('--control-plane-records', 10, 100_000), 2000)
    .option('--batch-plugin <file.wasm>', 'a WASM batch-size strategy (ABI 1, e.g. examples/batch-plugins/) for the SITS runs instead of the built-in')
    .action(
      async (o: {
        trace: string;
        gpus: number;
        slaP99Ms: number;
        kvHitRate: number;
        records?: number;
        faultSeeds: number;
        json: string;
        details?: string;
        batchPlugin?: string;
        controlPlane?: boolean;
        controlPlaneRecords: number;
      }) => {
        // First, so that a missing control plane fails the run before minutes of simulation, and nothing is written.
        let cp: ControlPlaneMeasurement | undefined;
        if (o.controlPlane === true) {
          try {
            cp = await measureControlPlane({ records: o.controlPlaneRecords, workers: 2, log: (l) => process.stderr.write(`${l}\n`) });
          } catch (e) {
            throw new CliError(`--control-plane: not measured: ${(e as Error).message}`);
          }
        }
        let plugin: WasmPlugin | undefined;
        if (o.batchPlugin !== undefined) {
          // A bench with a refused plugin would silently measure the built-in: refuse the run instead.
          const p = WasmPlugin.loadFile(o.batchPlugin, { strategies: ['batchSize'] });
          if (!p.ok) throw new CliError(`--batch-plugin: ${p.reason}`);
          plugin = p.value;
        }
        let r: ReturnType<typeof benchBatch>;
        try {
          r = benchBatch(o.trace, {
            gpus: o.gpus,
            slaP99Ms: o.slaP99Ms,
            kvHitRate: o.kvHitRate,
            ...(o.records === undefined ? {} : { records: o.records }),
            faultSeeds: Array.from({ length: o.faultSeeds }, (_, i) => i + 1),
            ...(plugin === undefined ? {} : { batchPlugin: plugin }),
          });
        } catch (e) {
          if (e instanceof TraceError) throw new CliError(e.message);
          throw e;
        } finally {
          plugin?.close();
        }
        const json = { ...r.json, controlPlane: cp === undefined ? null : { writesPerJob: cp.writesPerJob } };
        const details = { ...r.details, controlPlane: cp === undefined ? { notMeasured: NOT_ASKED } : cp.details };
        writeFileSync(o.json, `${JSON.stringify(json, null, 2)}\n`);
        if (o.details !== undefined) writeFileSync(o.details, `${JSON.stringify(details, null, 2)}\n`);
        const rows = (['static', 'fixed', 'sits'] as const).map((k) => {
          const b = r.json[k];
          return [k, b.throughputTokensPerSec.toFixed(0), b.p99LatencyMs.toFixed(0), b.utilizationPct.toFixed(1), b.gpuHoursPerMTokens.toFixed(5)];
        });
        const t = r.json.tenants;
        const f = r.json.faults;
        const g = r.details.goal;
        process.stdout.write(
          `${r.details.records} records on ${r.details.gpus} GPUs (${r.details.model}); SITS p99 SLA ${r.details.slaP99Ms} ms\n\n` +
            `${table(['policy', 'tokens/s', 'p99 ms', 'util %', 'GPU-h/Mtok'], rows)}\n\n` +
            `tenants (GPU time %, entitled %): gold ${t.gold.sharePct}/${t.gold.entitledPct}, silver ${t.silver.sharePct}/${t.silver.entitledPct}, bronze ${t.bronze.sharePct}/${t.bronze.entitledPct}\n` +
            `faults: ${f.recordsLost} lost, ${f.recordsDuplicated} duplicated, makespan ×${f.makespanRatio} (the capacity left allows ×${r.details.faultCapacityBoundRatio} at best)\n` +
            heldOutLine(r.details.heldOutFaults) +
            `goal: p99 −${g.p99ReductionVsStaticPct} % vs static (≥ 47 % ${g.p99Goal47 ? 'yes' : 'NO'}), util ×${g.utilizationVsStatic} (≥ 2 ${g.utilizationGoal2x ? 'yes' : 'NO'}), ` +
            `throughput ×${g.throughputVsStatic} (≥ 3.2 ${g.throughputGoal3_2x ? 'yes' : 'NO'}), tiers within 10 % ${g.tiersWithin10Pct ? 'yes' : 'NO'}, exactly once ${g.exactlyOnce ? 'yes' : 'NO'}, makespan ≤ 1.2 ${g.makespanGoal1_2 ? 'yes' : 'NO'}\n` +
            controlPlaneLine(cp) +
            (r.details.batchPlugin === undefined
              ? ''
              : `batch plugin ${r.details.batchPlugin.name}: ${r.details.batchPlugin.plugin} batch sizes by the plugin, ${r.details.batchPlugin.builtin} by the built-in${r.details.batchPlugin.lastFallback === undefined ? '' : ` (last: ${r.details.batchPlugin.lastFallback})`}\n`),
        );
      },
    );
}

const NOT_ASKED = 'not measured: needs --control-plane (a real kube-apiserver + etcd; the pure bench starts no cluster)';

function controlPlaneLine(cp: ControlPlaneMeasurement | undefined): string {
  if (cp === undefined) return `controlPlane: null (${NOT_ASKED})\n`;
  const d = cp.details;
  return (
    `control plane (one job of ${d.records} records on ${d.workers} workers, ${d.jobSeconds} s, kube-apiserver ${d.apiserver} /metrics): API writes per job sits ${cp.writesPerJob.sits}, per-record status writer ${cp.writesPerJob.naive}: ${d.reductionPct} % fewer (goal ≥ 70 % ${d.reductionPct >= 70 ? 'yes' : 'NO'}); ` +
    `etcd writes on the job object ${d.etcdJobWritesPerJob.sits} vs ${d.etcdJobWritesPerJob.naive}\n`
  );
}

function heldOutLine(
  h: readonly { seed: number; makespanRatio: number; capacityBoundRatio: number; recordsLost: number; recordsDuplicated: number }[] | undefined,
): string {
  if (h === undefined || h.length === 0) return '';
  const worst = Math.max(...h.map((x) => x.makespanRatio));
  const bad = h.reduce((a, x) => a + x.recordsLost + x.recordsDuplicated, 0);
  const over = h.filter((x) => x.makespanRatio > 1.2).length;
  return `held-out fault plans (${h.length}): makespan ×${h.map((x) => x.makespanRatio).join(' ×')} (capacity bounds ×${h.map((x) => x.capacityBoundRatio).join(' ×')}); worst ×${worst}, ${over} over 1.2, ${bad} records lost or duplicated\n`;
}
