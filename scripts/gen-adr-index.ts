// Writes docs/adr/README.md, the index of the ADRs, from each ADR's header lines (scripts/adr-index.ts).
//
//   npx tsx scripts/gen-adr-index.ts           write the file
//   npx tsx scripts/gen-adr-index.ts --check   exit 1 if the committed file differs or a relation lacks its inverse
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { adrProblems, gaps, readAdrs, renderAdrIndex } from './adr-index.ts';

export const ADR_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '../docs/adr');
export const ADR_INDEX = join(ADR_DIR, 'README.md');

function main(argv: readonly string[]): number {
  const adrs = readAdrs(ADR_DIR);
  const problems = adrProblems(adrs);
  for (const p of problems) console.error(`gen-adr-index: ${p}`);
  const text = renderAdrIndex(adrs);
  const current = existsSync(ADR_INDEX) ? readFileSync(ADR_INDEX, 'utf8') : undefined;
  if (argv.includes('--check')) {
    if (current === text && problems.length === 0) return 0;
    if (current !== text) console.error('gen-adr-index: docs/adr/README.md is out of date; run `npm run gen:adr-index`');
    return 1;
  }
  if (current !== text) writeFileSync(ADR_INDEX, text);
  console.log(`gen-adr-index: ${adrs.length} ADRs, ${gaps(adrs).length} unused numbers in docs/adr/README.md (${current === text ? 'unchanged' : 'written'})`);
  return problems.length === 0 ? 0 : 1;
}

process.exitCode = main(process.argv.slice(2));
