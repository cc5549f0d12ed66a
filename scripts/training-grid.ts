// `sits bench training` over several clusters and seeds (ADR 0196): sits vs kube-default per run, and a summary.
//
//   npx tsx scripts/training-grid.ts [--seeds 1-6] [--out FILE] [CLUSTER.yaml|default …]
//
// Default: the bench's own cluster, examples/training-cluster.yaml and every file in bench/training-clusters/.
// Each run is `sits bench training --seed N [--cluster FILE]`; the JSON keeps its ratios.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { benchTraining } from '../src/bench/training/training-bench.ts';
import { loadClusterText } from '../src/formats/cluster-file.ts';

const args = process.argv.slice(2);
const flag = (name: string): string | undefined => {
  const i = args.indexOf(name);
  if (i < 0) return undefined;
  const v = args[i + 1];
  args.splice(i, 2);
  return v;
};
const seedSpec = flag('--seeds') ?? '1-6';
const out = flag('--out');
const m = /^(\d+)-(\d+)$/.exec(seedSpec);
const seeds = m === null ? seedSpec.split(',').map(Number) : Array.from({ length: Number(m[2]) - Number(m[1]) + 1 }, (_, i) => Number(m[1]) + i);
if (seeds.some((s) => !Number.isInteger(s) || s < 0)) {
  console.error(`training-grid: --seeds ${seedSpec}: give N-M or N,M,… (whole numbers)`);
  process.exit(2);
}
const dir = 'bench/training-clusters';
const clusters =
  args.length > 0
    ? args
    : [
        'default',
        'examples/training-cluster.yaml',
        ...readdirSync(dir)
          .sort()
          .map((f) => join(dir, f)),
      ];

const known = (xs: readonly (number | null)[]): number[] => xs.filter((x): x is number => x !== null);
const mean = (xs: readonly number[]): number => Math.round((1000 * xs.reduce((a, b) => a + b, 0)) / Math.max(1, xs.length)) / 1000;
type Run = {
  cluster: string;
  seed: number;
  tokensPerSec: number;
  clusterTokensPerSec: number | null;
  meanJct: number | null;
  waitP50: number | null;
  waitP99: number | null;
  jctP99: number | null;
};
const runs: Run[] = [];
for (const c of clusters) {
  let nodes;
  if (c !== 'default') {
    const r = loadClusterText(c, readFileSync(c, 'utf8'));
    if (!r.ok) {
      console.error(`training-grid: ${c}: ${JSON.stringify(r.error)}`);
      process.exit(2);
    }
    nodes = r.value;
  }
  for (const seed of seeds) {
    const b = benchTraining({ seed, ...(nodes === undefined ? {} : { cluster: nodes }) });
    const r = b.ratios;
    runs.push({
      cluster: c,
      seed,
      tokensPerSec: r.tokensPerSec,
      clusterTokensPerSec: r.clusterTokensPerSec,
      meanJct: r.meanJct,
      waitP50: r.waitP50,
      waitP99: r.waitP99,
      jctP99: r.jctP99,
    });
  }
  const mine = runs.filter((x) => x.cluster === c);
  const tps = mine.map((x) => x.tokensPerSec);
  console.log(
    `${c.padEnd(48)} tokens/s per job ×${mean(tps).toFixed(3)} (min ${Math.min(...tps)}), mean JCT ×${mean(mine.map((x) => x.meanJct ?? Number.NaN)).toFixed(3)}: ${tps.join(' ')}`,
  );
}
const tps = runs.map((x) => x.tokensPerSec);
const summary = {
  runs: runs.length,
  tokensPerSecMean: mean(tps),
  below1: tps.filter((x) => x < 1).length,
  below1_1: tps.filter((x) => x < 1.1).length,
  meanJctMean: mean(runs.map((x) => x.meanJct ?? Number.NaN)),
  // Over the runs where kube-default's figure is not 0 (a wait p50 of 0 has no ratio).
  clusterTokensPerSecMean: mean(known(runs.map((x) => x.clusterTokensPerSec))),
  waitP50Mean: mean(known(runs.map((x) => x.waitP50))),
  waitP99Mean: mean(known(runs.map((x) => x.waitP99))),
  jctP99Mean: mean(known(runs.map((x) => x.jctP99))),
};
console.log(`all: ${JSON.stringify(summary)}`);
if (out !== undefined) writeFileSync(out, `${JSON.stringify({ seeds, clusters, summary, runs }, null, 2)}\n`);
