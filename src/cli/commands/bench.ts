import type { Command } from 'commander';
import { registerBenchAdmission } from './bench-admission.ts';
import { registerBenchBatch } from './bench-batch.ts';
import { registerBenchChaos } from './bench-chaos.ts';
import { registerBenchCheckpoint } from './bench-checkpoint.ts';
import { registerBenchDashboard } from './bench-dashboard.ts';
import { registerBenchWebhook } from './bench-webhook.ts';
import { registerBenchAll, registerBenchFgd } from './bench-fgd.ts';
import { registerBenchKube } from './bench-kube.ts';
import { registerBenchLive } from './bench-live.ts';
import { registerBenchReplay } from './bench-replay.ts';
import { registerBenchServing } from './bench-serving.ts';
import { registerBenchServingTraces } from './bench-serving-traces.ts';
import { registerBenchSoak } from './bench-soak.ts';
import { registerBenchStartup } from './bench-startup.ts';
import { registerBenchStatusWrites } from './bench-status-writes.ts';
import { registerBenchTenants } from './bench-tenants.ts';
import { registerBenchThroughput } from './bench-throughput.ts';
import { registerBenchTraining } from './bench-training.ts';

/** `sits bench …`: benchmarks that write JSON. Subcommands register themselves here. */
export function registerBench(program: Command): void {
  const bench = program.command('bench').description('benchmarks that write JSON results (placement quality, throughput, fairness, live binding, LLM serving)');
  registerBenchFgd(bench);
  registerBenchThroughput(bench);
  registerBenchReplay(bench);
  registerBenchTenants(bench);
  registerBenchAdmission(bench);
  registerBenchWebhook(bench);
  registerBenchKube(bench);
  registerBenchLive(bench);
  registerBenchServing(bench);
  registerBenchServingTraces(bench);
  registerBenchTraining(bench);
  registerBenchBatch(bench);
  registerBenchDashboard(bench);
  registerBenchCheckpoint(bench);
  registerBenchStartup(bench);
  registerBenchStatusWrites(bench);
  registerBenchSoak(bench);
  registerBenchChaos(bench);
  registerBenchAll(bench);
}
