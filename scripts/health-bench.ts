// The health numbers of issue 14 (`sits bench checkpoint` reports them under "health" once that command
// exists): foreseen failures and false quarantines on the generated fault series, on the tuning seeds the
// detector's defaults were chosen on and on the report seeds, side by side.
//
//   npx tsx scripts/health-bench.ts [--devices N] [--days D] [--json OUT]
import { writeFileSync } from 'node:fs';
import { healthBenchDetail, REPORT_SEEDS, TUNING_SEEDS } from '../src/bench/checkpoint/health.ts';

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
  const out = {
    tuning: { seeds: TUNING_SEEDS, ...healthBenchDetail({ seeds: TUNING_SEEDS, devices, days }) },
    report: { seeds: REPORT_SEEDS, ...healthBenchDetail({ seeds: REPORT_SEEDS, devices, days }) },
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
