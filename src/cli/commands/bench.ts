import type { Command } from 'commander';
import { registerBenchKube } from './bench-kube.ts';
import { registerBenchTenants } from './bench-tenants.ts';

/** `sits bench …`: benchmarks that write JSON. Subcommands register themselves here. */
export function registerBench(program: Command): void {
  const bench = program.command('bench').description('benchmarks that write JSON results (placement quality, throughput)');
  registerBenchKube(bench);
  registerBenchTenants(bench);
}
