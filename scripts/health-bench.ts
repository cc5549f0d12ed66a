// The health numbers of issue 14 (`sits bench checkpoint` reports the held-out ones under "health"): foreseen
// failures and false quarantines on the generated fault series, on the tuning seeds the detector's defaults
// are chosen on (ADR 0166: 1–20, shown as 1–10 and 11–20 as well). `--report` adds the held-out seeds: run it
// once, after the configuration is committed, never while choosing one.
//
//   npx tsx scripts/health-bench.ts [--devices N] [--days D] [--report] [--json OUT]
import { writeFileSync } from 'node:fs';
import { FORMER_REPORT_SEEDS, healthBenchDetail, REPORT_SEEDS, TUNING_SEEDS } from '../src/bench/checkpoint/health.ts';

function arg(argv: readonly string[], name: string): string | undefined {
  const i = argv.indexOf(name);
  return i < 0 ? undefined : argv[i + 1];
}

function main(argv: readonly string[]): number {
  const num = (name: string, dflt: number): number => {
    const v = arg(argv, name);
    const n = v === undefined ? dflt : Number(v);
    if (!Number.isInteger(n) || n <= 0) throw new Error(`${name}: expected a positive integer, got ${JSON.stringify(v)}`);
    return n;
  };
  const devices = num('--devices', 400);
  const days = num('--days', 3);
  const first = TUNING_SEEDS.filter((s) => !FORMER_REPORT_SEEDS.includes(s));
  const a = healthBenchDetail({ seeds: first, devices, days });
  const b = healthBenchDetail({ seeds: FORMER_REPORT_SEEDS, devices, days });
  const pct = (x: number, of: number): number => Math.round((10_000 * x) / of) / 100;
  const out = {
    // The two halves' counts added up (a median lead cannot be added, so none is given).
    tuning: {
      seeds: TUNING_SEEDS,
      foreseenPct: pct(a.foreseen + b.foreseen, a.failures + b.failures),
      falseQuarantinesPer1000GpuDays: Math.round((1_000_000 * (a.falseQuarantines + b.falseQuarantines)) / (a.gpuDays + b.gpuDays)) / 1000,
      failures: a.failures + b.failures,
      foreseen: a.foreseen + b.foreseen,
      falseQuarantines: a.falseQuarantines + b.falseQuarantines,
    },
    tuning1to10: { seeds: first, ...a },
    tuning11to20: { seeds: FORMER_REPORT_SEEDS, ...b },
    ...(argv.includes('--report') ? { report: { seeds: REPORT_SEEDS, ...healthBenchDetail({ seeds: REPORT_SEEDS, devices, days }) } } : {}),
  };
  const text = `${JSON.stringify(out, null, 2)}\n`;
  const file = arg(argv, '--json');
  if (file !== undefined) writeFileSync(file, text);
  process.stdout.write(text);
  return 0;
}

try {
  process.exitCode = main(process.argv.slice(2));
} catch (e) {
  console.error(`health-bench: ${(e as Error).message}`);
  process.exitCode = 2;
}
