// The health numbers of issue 14 (`sits bench checkpoint` reports the held-out ones under "health"): foreseen
// failures and false quarantines on the generated fault series, on the tuning seeds the detector's defaults
// are chosen on (ADR 0166, ADR 0170: 1–40, shown by origin as well). `--report` adds the held-out seeds: run it
// once, after the configuration is committed, never while choosing one.
//
//   npx tsx scripts/health-bench.ts [--devices N] [--days D] [--report] [--json OUT]
import { writeFileSync } from 'node:fs';
import { healthBenchDetail, REPORT_SEEDS, TUNING_GROUPS, TUNING_SEEDS } from '../src/bench/checkpoint/health.ts';

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
  const groups = TUNING_GROUPS.map((g) => ({ name: g.name, seeds: g.seeds, ...healthBenchDetail({ seeds: g.seeds, devices, days }) }));
  const sum = (f: (g: (typeof groups)[number]) => number): number => groups.reduce((s, g) => s + f(g), 0);
  const pct = (x: number, of: number): number => Math.round((10_000 * x) / of) / 100;
  const out = {
    // The groups' counts added up (a median lead cannot be added, so none is given).
    tuning: {
      seeds: TUNING_SEEDS,
      foreseenPct: pct(
        sum((g) => g.foreseen),
        sum((g) => g.failures),
      ),
      falseQuarantinesPer1000GpuDays: Math.round((1_000_000 * sum((g) => g.falseQuarantines)) / sum((g) => g.gpuDays)) / 1000,
      failures: sum((g) => g.failures),
      foreseen: sum((g) => g.foreseen),
      falseQuarantines: sum((g) => g.falseQuarantines),
    },
    groups,
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
