// Runs `sits bench …` subcommands in-process through commander, capturing stdout, for tests.
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';
import { vi } from 'vitest';
import { registerBenchBatch } from '../commands/bench-batch.ts';
import { registerBenchDashboard } from '../commands/bench-dashboard.ts';
import { registerBenchFgd } from '../commands/bench-fgd.ts';
import { registerBenchKube } from '../commands/bench-kube.ts';
import { registerBenchReplay } from '../commands/bench-replay.ts';
import { registerBenchServing } from '../commands/bench-serving.ts';
import { registerBenchServingTraces } from '../commands/bench-serving-traces.ts';
import { registerBenchThroughput } from '../commands/bench-throughput.ts';
import { registerBenchWebhook } from '../commands/bench-webhook.ts';

/** Path of a file in src/sim/testdata. */
export const simFixture = (f: string): string => fileURLToPath(new URL(`../../sim/testdata/${f}`, import.meta.url));

export async function runBench(args: readonly string[]): Promise<{ out: string; error?: Error }> {
  const program = new Command('sits').exitOverride().configureOutput({ writeErr: () => undefined, writeOut: () => undefined });
  const bench = program.command('bench');
  registerBenchFgd(bench);
  registerBenchThroughput(bench);
  registerBenchReplay(bench);
  registerBenchWebhook(bench);
  registerBenchServing(bench);
  registerBenchServingTraces(bench);
  registerBenchBatch(bench);
  registerBenchDashboard(bench);
  registerBenchKube(bench);
  let out = '';
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    out += String(chunk);
    return true;
  });
  try {
    await program.parseAsync(['node', 'sits', 'bench', ...args]);
    return { out };
  } catch (e) {
    return { out, error: e as Error };
  } finally {
    spy.mockRestore();
  }
}
