// Writes the deployment manifests under deploy/ from src/deploy: sits.yaml (all-in-one, CRDs included),
// rbac.yaml, the RBAC audit table (rbac.md, rbac.json; docs/rbac.md for the defaults) and the Helm chart deploy/helm/sits/. deploy/crds/ belongs to scripts/gen-crds.ts.
//
//   npx tsx scripts/gen-deploy.ts           write the files
//   npx tsx scripts/gen-deploy.ts --check   exit 1 if the committed files differ from the generator
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { syncDeployFiles } from '../src/deploy/write.ts';
import { docsRbacMarkdown } from '../src/deploy/bundle.ts';

const DEPLOY_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '../deploy');
/** The RBAC audit table for the default values, in the docs (ADR 0175). */
const DOCS_RBAC = resolve(dirname(fileURLToPath(import.meta.url)), '../docs/rbac.md');

function main(argv: readonly string[]): number {
  const check = argv.includes('--check');
  const r = syncDeployFiles(DEPLOY_DIR, { check });
  const table = docsRbacMarkdown();
  const docsStale = !existsSync(DOCS_RBAC) || readFileSync(DOCS_RBAC, 'utf8') !== table;
  if (!check && docsStale) writeFileSync(DOCS_RBAC, table);
  if (check) {
    if (r.changed.length === 0 && r.stale.length === 0 && !docsStale) return 0;
    if (docsStale) console.error('gen-deploy: docs/rbac.md is out of date');
    for (const f of r.changed) console.error(`gen-deploy: deploy/${f} is out of date`);
    for (const f of r.stale) console.error(`gen-deploy: deploy/${f} is not generated any more`);
    console.error('gen-deploy: run `npx tsx scripts/gen-deploy.ts`');
    return 1;
  }
  console.log(`gen-deploy: ${r.total} files under deploy/ (${r.changed.length} written, ${r.stale.length} removed)`);
  return 0;
}

process.exitCode = main(process.argv.slice(2));
