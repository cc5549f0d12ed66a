// Writes the deployment manifests under deploy/ from src/deploy: sits.yaml (all-in-one, CRDs included),
// rbac.yaml and the Helm chart deploy/helm/sits/. deploy/crds/ belongs to scripts/gen-crds.ts.
//
//   npx tsx scripts/gen-deploy.ts           write the files
//   npx tsx scripts/gen-deploy.ts --check   exit 1 if the committed files differ from the generator
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { syncDeployFiles } from '../src/deploy/write.ts';

const DEPLOY_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '../deploy');

function main(argv: readonly string[]): number {
  const check = argv.includes('--check');
  const r = syncDeployFiles(DEPLOY_DIR, { check });
  if (check) {
    if (r.changed.length === 0 && r.stale.length === 0) return 0;
    for (const f of r.changed) console.error(`gen-deploy: deploy/${f} is out of date`);
    for (const f of r.stale) console.error(`gen-deploy: deploy/${f} is not generated any more`);
    console.error('gen-deploy: run `npx tsx scripts/gen-deploy.ts`');
    return 1;
  }
  console.log(`gen-deploy: ${r.total} files under deploy/ (${r.changed.length} written, ${r.stale.length} removed)`);
  return 0;
}

process.exitCode = main(process.argv.slice(2));
