// Writes deploy/crds/<group>_<plural>.yaml from the TypeBox schemas in src/api.
//
//   npx tsx scripts/gen-crds.ts           write the files
//   npx tsx scripts/gen-crds.ts --check   exit 1 if the committed files differ from the generator
//
// Refuses to write a CRD whose schema fails the structural checks (src/api/structural-check.ts).
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildCrds, crdFiles } from '../src/api/crd.ts';
import { API_GROUP } from '../src/api/wire.ts';
import { structuralIssues } from '../src/api/structural-check.ts';

const OUT_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '../deploy/crds');

function main(argv: readonly string[]): number {
  const checkOnly = argv.includes('--check');
  const issues = buildCrds().flatMap((crd) => structuralIssues(crd.spec.versions[0]?.schema.openAPIV3Schema ?? {}).map((i) => `${crd.metadata.name}: ${i}`));
  if (issues.length > 0) {
    console.error(`gen-crds: the schemas are not fit for the apiserver:\n  ${issues.join('\n  ')}`);
    return 1;
  }

  const files = crdFiles();
  const wanted = new Set(files.map((f) => f.fileName));
  const stale = existsSync(OUT_DIR) ? readdirSync(OUT_DIR).filter((f) => f.startsWith(`${API_GROUP}_`) && f.endsWith('.yaml') && !wanted.has(f)) : [];
  const changed = files.filter((f) => {
    const path = join(OUT_DIR, f.fileName);
    return !existsSync(path) || readFileSync(path, 'utf8') !== f.content;
  });

  if (checkOnly) {
    if (changed.length === 0 && stale.length === 0) return 0;
    for (const f of changed) console.error(`gen-crds: ${join('deploy/crds', f.fileName)} is out of date`);
    for (const f of stale) console.error(`gen-crds: ${join('deploy/crds', f)} is not generated any more`);
    console.error('gen-crds: run `npx tsx scripts/gen-crds.ts`');
    return 1;
  }

  mkdirSync(OUT_DIR, { recursive: true });
  for (const f of changed) writeFileSync(join(OUT_DIR, f.fileName), f.content);
  for (const f of stale) rmSync(join(OUT_DIR, f));
  console.log(`gen-crds: ${files.length} CRDs in deploy/crds (${changed.length} written, ${stale.length} removed)`);
  return 0;
}

process.exitCode = main(process.argv.slice(2));
