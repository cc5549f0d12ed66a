import type { Command } from 'commander';

/** `sits bench …`: benchmarks that write JSON. Subcommands register themselves here. */
export function registerBench(program: Command): void {
  program.command('bench').description('benchmarks that write JSON results (placement quality, throughput)');
}
