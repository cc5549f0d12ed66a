// Prints the checkpoint numbers of issue 14 until `sits bench checkpoint` exists (it will call the same functions):
//
//   npx tsx scripts/checkpoint-numbers.ts [redone|migration|both] [--nodes N] [--window-hours H] [--compress K] [--until-hours H]
//
// redone:    {"checkpointAware": x, "plain": x} plus fairness (Jain) of both runs — the tenants simulation.
// migration: {"withoutGangWaitP99Sec", "withGangWaitP99Sec", "withoutUnallocatedPct", "withUnallocatedPct"} plus
//            the migrations made — the FGD default trace replayed with departures.
import { runMigrationBenchDetail } from '../src/bench/checkpoint/migration.ts';
import { runRedoneBenchDetail } from '../src/bench/checkpoint/redone.ts';

function arg(name: string): number | undefined {
  const i = process.argv.indexOf(name);
  if (i < 0) return undefined;
  const v = Number(process.argv[i + 1]);
  if (!Number.isFinite(v)) throw new Error(`${name}: not a number: ${process.argv[i + 1] ?? '(missing)'}`);
  return v;
}

const what = process.argv[2] ?? 'both';
if (!['redone', 'migration', 'both'].includes(what)) throw new Error(`unknown part "${what}" (redone, migration, both)`);
const nodes = arg('--nodes');
const windowHours = arg('--window-hours');
const compress = arg('--compress');
const untilHours = arg('--until-hours');
if (what !== 'migration') {
  const t = Date.now();
  const r = runRedoneBenchDetail({ ...(nodes === undefined ? {} : { nodes }), ...(windowHours === undefined ? {} : { windowHours }) });
  console.log(JSON.stringify({ redoneGpuHours: { checkpointAware: r.checkpointAware, plain: r.plain }, detail: r, seconds: (Date.now() - t) / 1000 }));
}
if (what !== 'redone') {
  const t = Date.now();
  const m = runMigrationBenchDetail({ ...(compress === undefined ? {} : { compress }), ...(untilHours === undefined ? {} : { untilHours }) });
  const { seeds, ...migration } = m;
  console.log(JSON.stringify({ migration, detail: { seeds }, seconds: (Date.now() - t) / 1000 }));
}
