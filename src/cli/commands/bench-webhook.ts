import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { runWebhookBench } from '../../bench/webhook/webhook-bench.ts';
import { RULES } from '../../guard/rules/index.ts';
import { intOption } from '../options.ts';

export function registerBenchWebhook(bench: Command): void {
  bench
    .command('webhook')
    .description('admission webhook reviews/s and latency over HTTPS (every rule on its fixtures), and sits lint manifests/s')
    .option('--reviews <n>', 'reviews to send', intOption('--reviews', 100, 10_000_000), 20_000)
    .option('--concurrency <n>', 'connections sending reviews back to back (the apiserver keeps several)', intOption('--concurrency', 1, 1024), 16)
    .requiredOption('--json <file>', 'write the result here')
    .action(async (o: { reviews: number; concurrency: number; json: string }) => {
      const w = await runWebhookBench({ rules: RULES, reviews: o.reviews, concurrency: o.concurrency, now: () => performance.now() });
      const r = { reviewsPerSec: w.reviewsPerSec, latencyMs: { p50: w.latencyMs.p50, p99: w.latencyMs.p99 }, webhook: w };
      writeFileSync(o.json, `${JSON.stringify(r, null, 2)}\n`);
      process.stdout.write(`webhook: ${w.reviewsPerSec} reviews/s, latency p50 ${w.latencyMs.p50} ms, p99 ${w.latencyMs.p99} ms (${w.reviews} reviews, ${w.concurrency} connections, ${w.denied} denied, ${w.warned} warned)\n`);
    });
}
