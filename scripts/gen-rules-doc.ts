// Writes docs/rules.md from the guard-rail rules (src/guard/rules).
//
//   npx tsx scripts/gen-rules-doc.ts           write the file
//   npx tsx scripts/gen-rules-doc.ts --check   exit 1 if the committed file differs from the generator
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { renderRulesDoc } from '../src/guard/rules-doc.ts';
import { RULES } from '../src/guard/rules/index.ts';

export const RULES_DOC = resolve(dirname(fileURLToPath(import.meta.url)), '../docs/rules.md');

function main(argv: readonly string[]): number {
  const text = renderRulesDoc(RULES);
  const current = existsSync(RULES_DOC) ? readFileSync(RULES_DOC, 'utf8') : undefined;
  if (argv.includes('--check')) {
    if (current === text) return 0;
    console.error('gen-rules-doc: docs/rules.md is out of date; run `npm run gen:rules`');
    return 1;
  }
  if (current !== text) writeFileSync(RULES_DOC, text);
  console.log(`gen-rules-doc: ${RULES.length} rules in docs/rules.md (${current === text ? 'unchanged' : 'written'})`);
  return 0;
}

process.exitCode = main(process.argv.slice(2));
