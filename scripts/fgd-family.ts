/**
 * The FGD trace family of issue 18 (ADR 0106): generate the variants listed in the split file, sweep
 * `sits-frag` constants on the training subset in this process, and summarise `sits bench fgd` JSONs.
 *
 *   npx tsx scripts/fgd-family.ts gen     --out /tmp/fam                      # CSVs of every listed variant
 *   npx tsx scripts/fgd-family.ts sweep   --out /tmp/fam --set training --seeds 42-44 --params '{"holeWasteWeight":3}'
 *   npx tsx scripts/fgd-family.ts summary --out /tmp/fam --set validation     # per variant FGD, sits, bound
 *
 * The bench itself runs through the CLI: `node bin/sits.mjs bench fgd --pods <out>/openb_pod_list_<v>.csv …`.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { median } from '../src/core/stats.ts';
import { resolveProfile } from '../src/core/plugins/registry.ts';
import type { Profile } from '../src/core/framework/types.ts';
import { sitsFragPlugin, SITS_FRAG_DEFAULTS, type SitsFragParams } from '../src/core/plugins/fgd/sits-frag.ts';
import { prepareFgdTrace, runFgd } from '../src/bench/fgd/run.ts';
import { parseSeeds } from '../src/bench/fgd/summary.ts';
import { generateVariant, measureShares, parseVariantName, variantCsv } from '../src/bench/fgd/variants.ts';
import { loadOpenbNodes, loadOpenbPods } from '../src/sim/trace/openb.ts';

interface Split {
  readonly base: string;
  readonly specSource: string;
  readonly nodes: string;
  readonly training: { readonly variants: readonly string[]; readonly seeds: string };
  readonly validation: { readonly variants: readonly string[]; readonly seeds: string };
}

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    out: { type: 'string', default: '/tmp/fgd-family' },
    split: { type: 'string', default: 'bench/fgd-family/split.json' },
    traces: { type: 'string', default: '../shared/traces/alibaba-gpu-v2023' },
    set: { type: 'string', default: 'all' },
    seeds: { type: 'string' },
    params: { type: 'string', default: '{}' },
    only: { type: 'string' },
    label: { type: 'string', default: '' },
  },
});

const split = JSON.parse(readFileSync(values.split, 'utf8')) as Split;
const setVariants = (set: string): string[] =>
  set === 'training'
    ? [...split.training.variants]
    : set === 'validation'
      ? [...split.validation.variants]
      : [...split.training.variants, ...split.validation.variants];
let variants = setVariants(values.set);
if (values.only !== undefined) {
  const re = new RegExp(values.only);
  variants = variants.filter((v) => re.test(v));
}
const nodesFile = join(values.traces, split.nodes);
const podsFile = (v: string): string => join(values.out, `openb_pod_list_${v}.csv`);

function gen(): void {
  mkdirSync(values.out, { recursive: true });
  const nodes = loadOpenbNodes(nodesFile);
  const base = loadOpenbPods(join(values.traces, split.base)).pods;
  const specSource = loadOpenbPods(join(values.traces, split.specSource)).pods;
  for (const v of variants) {
    const spec = parseVariantName(v);
    if (spec === undefined) throw new Error(`${values.split}: "${v}" is not a variant name (e.g. gpuspec28-s1)`);
    const pods = generateVariant(base, nodes, spec, specSource);
    writeFileSync(podsFile(v), variantCsv(pods));
    const m = measureShares(pods, nodes);
    process.stdout.write(
      `${v}: ${pods.length} pods, cpu ${m.cpu.toFixed(1)}‰, gpushare ${m.gpushare.toFixed(1)} %, gpuspec ${m.gpuspec.toFixed(1)} %, multigpu ${m.multigpu.toFixed(1)} %\n`,
    );
  }
}

/** The `sits` profile with the sits-frag plugin rebuilt from `params`. */
function sitsWith(params: SitsFragParams, typical: Parameters<typeof sitsFragPlugin>[0]): Profile {
  const r = resolveProfile('sits', { typicalShapes: typical });
  if (!r.ok) throw new Error('sits profile');
  const p = sitsFragPlugin(typical, params);
  const swap = <T extends { name: string }>(x: T): T => (x.name === 'sits-frag' ? (p as unknown as T) : x);
  return { ...r.value, scorers: r.value.scorers.map((s) => ({ ...s, plugin: swap(s.plugin) })), devicePicker: swap(r.value.devicePicker) };
}

function sweep(): void {
  const set = values.set === 'validation' ? split.validation : split.training;
  const seeds = parseSeeds(values.seeds ?? set.seeds) ?? [];
  const params = { ...SITS_FRAG_DEFAULTS, ...(JSON.parse(values.params) as Partial<SitsFragParams>) };
  const nodes = loadOpenbNodes(nodesFile);
  const cacheDir = join(values.out, 'fgd-cache');
  mkdirSync(cacheDir, { recursive: true });
  const margins: number[] = [];
  let wins = 0;
  for (const v of variants) {
    const trace = prepareFgdTrace(`openb_pod_list_${v}.csv`, nodes, loadOpenbPods(podsFile(v)).pods);
    const fgd: number[] = [];
    const sits: number[] = [];
    for (const seed of seeds) {
      const cf = join(cacheDir, `${v}-${seed}.json`);
      let f: number;
      if (existsSync(cf)) f = JSON.parse(readFileSync(cf, 'utf8')) as number;
      else {
        f = 100 - (runFgd(trace, 'fgd', seed).buckets.allocPct[100] ?? 0);
        writeFileSync(cf, JSON.stringify(f));
      }
      fgd.push(f);
      sits.push(100 - (runFgd(trace, 'sits', seed, { profile: sitsWith(params, trace.typical) }).buckets.allocPct[100] ?? 0));
    }
    const mf = median(fgd);
    const ms = median(sits);
    margins.push(mf - ms);
    if (ms <= mf) wins++;
    process.stdout.write(`${values.label}\t${v}\tfgd ${mf.toFixed(3)}\tsits ${ms.toFixed(3)}\tmargin ${(mf - ms).toFixed(3)}\n`);
  }
  const mean = margins.reduce((a, b) => a + b, 0) / Math.max(1, margins.length);
  process.stdout.write(
    `${values.label}\tSUMMARY\t${JSON.stringify(params)}\twins ${wins}/${margins.length}\tmean margin ${mean.toFixed(3)}\tmin margin ${Math.min(...margins).toFixed(3)}\n`,
  );
}

interface BenchJson {
  readonly results: readonly { readonly policy: string; readonly unallocatedPct: Record<string, number | null>; readonly runMs: number }[];
  readonly lowerBound?: { readonly unallocatedPct: Record<string, number | null> };
}

function summary(): void {
  const rows: string[] = ['| variant | FGD | sits | margin (FGD − sits) | lower bound | sits − bound |', '|---|---|---|---|---|---|'];
  const margins: number[] = [];
  let wins = 0;
  for (const v of variants) {
    const f = join(values.out, 'results', `fgd-${v}.json`);
    if (!existsSync(f)) {
      rows.push(`| ${v} | – | – | – | – | – |`);
      continue;
    }
    const j = JSON.parse(readFileSync(f, 'utf8')) as BenchJson;
    const at = (p: string): number => j.results.find((r) => r.policy === p)?.unallocatedPct['100'] ?? NaN;
    const fg = at('fgd');
    const si = at('sits');
    const lb = j.lowerBound?.unallocatedPct['100'] ?? NaN;
    margins.push(fg - si);
    if (si <= fg) wins++;
    rows.push(`| ${v} | ${fg.toFixed(3)} | ${si.toFixed(3)} | ${(fg - si).toFixed(3)} | ${lb.toFixed(3)} | ${(si - lb).toFixed(3)} |`);
  }
  const mean = margins.reduce((a, b) => a + b, 0) / Math.max(1, margins.length);
  rows.push(
    '',
    `sits ≤ FGD on ${wins} of ${margins.length}; margin mean ${mean.toFixed(3)} pp, median ${median(margins).toFixed(3)} pp, worst ${Math.min(...margins).toFixed(3)} pp`,
  );
  process.stdout.write(`${rows.join('\n')}\n`);
}

const cmd = positionals[0];
if (cmd === 'gen') gen();
else if (cmd === 'sweep') sweep();
else if (cmd === 'summary') summary();
else {
  process.stderr.write('usage: fgd-family.ts gen|sweep|summary [--out DIR] [--split FILE] [--set training|validation|all] [--seeds 42-44] [--params JSON]\n');
  process.exitCode = 2;
}
