import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { runWebhookBench } from '../../bench/webhook/webhook-bench.ts';
import { runLintBench } from '../../guard/lint-bench.ts';
import { RULES } from '../../guard/rules/index.ts';
import { intOption } from '../options.ts';

export function registerBenchWebhook(bench: Command): void {
  bench
    .command('webhook')
    .description('admission webhook reviews/s and latency over HTTPS (every rule on its fixtures), and sits lint manifests/s')
    .option('--reviews <n>', 'reviews to send', intOption('--reviews', 100, 10_000_000), 20_000)
    .option('--concurrency <n>', 'connections sending reviews back to back (the apiserver keeps several)', intOption('--concurrency', 1, 1024), 16)
    .option('--manifests <n>', 'manifests for the sits lint run (parse + lint + format)', intOption('--manifests', 10, 1_000_000), 10_000)
    .option('--seed <n>', 'seed of the generated manifests', intOption('--seed'), 1)
    .requiredOption('--json <file>', 'write {reviewsPerSec, latencyMs: {p50, p99}, lintManifestsPerSec} here')
    .option('--details <file>', 'also write every measured detail (saturated latency, verdict counts, lint findings) here')
    .action(async (o: { reviews: number; concurrency: number; manifests: number; seed: number; json: string; details?: string }) => {
      const w = await runWebhookBench({ rules: RULES, reviews: o.reviews, concurrency: o.concurrency, now: () => performance.now() });
      process.stdout.write(
        `webhook: ${w.reviewsPerSec} reviews/s, latency p50 ${w.latencyMs.p50} ms, p99 ${w.latencyMs.p99} ms (${w.reviews} reviews, ${w.concurrency} connections, ${w.denied} denied, ${w.warned} warned)\n`,
      );
      const l = runLintBench({ manifests: o.manifests, seed: o.seed, rules: RULES, now: () => performance.now() });
      process.stdout.write(`lint: ${l.manifests} manifests in ${l.seconds.toFixed(2)} s (${l.manifestsPerSec}/s, ${l.findings} findings)\n`);
      // Exactly the shape issue 16 gives; the details (saturated latency, denied/warned, findings) go to --details.
      const r = { reviewsPerSec: w.reviewsPerSec, latencyMs: { p50: w.latencyMs.p50, p99: w.latencyMs.p99 }, lintManifestsPerSec: l.manifestsPerSec };
      writeFileSync(o.json, `${JSON.stringify(r, null, 2)}\n`);
      if (o.details !== undefined) writeFileSync(o.details, `${JSON.stringify({ webhook: w, lint: l }, null, 2)}\n`);
    });
}
