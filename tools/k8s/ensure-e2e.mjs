#!/usr/bin/env node
// Makes sure the upstream Kubernetes e2e suite binary (e2e.test, the package k8s.io/kubernetes/test/e2e built
// with `go test -c`) exists and prints the folder holding it on the last line of stdout. Progress goes to stderr.
// Built from the same wrapper module as kube-apiserver (tools/k8s/kube: same k8s version, same staging pins),
// cached apart so adding it did not invalidate the control plane's cache:
//   ${XDG_CACHE_HOME:-~/.cache}/sits-k8s/<k8s version>-e2e/e2e.test
// Used by `npm run conformance` and the conformance e2e test (docs/conformance.md, ADR 0073).
// Environment: SITS_E2E_BIN (a folder that must hold e2e.test; no build), XDG_CACHE_HOME, SITS_K8S_BUILD_JOBS.
// Plain Node ESM, no dependencies.

import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cacheRoot, ensureGoBuild, isExecutableFile, kubeVersionLdflags, reporter, requiredVersion, useBinFolder } from '../lib/cached-build.mjs';

const BINARY = 'e2e.test';
const HERE = dirname(fileURLToPath(import.meta.url));
const KUBE_MOD_DIR = join(HERE, 'kube');
const { log, fail } = reporter('sits-e2e');

useBinFolder('SITS_E2E_BIN', [BINARY], fail);

const k8sVersion = requiredVersion(join(KUBE_MOD_DIR, 'go.mod'), 'k8s.io/kubernetes', fail);
const key = `${k8sVersion}-e2e`;
const root = cacheRoot('sits-k8s');
const finalDir = join(root, key);
// The suite compares its own version with the server's in places (skips by server version): stamped like the
// control plane's binaries.
const ldflags = kubeVersionLdflags(k8sVersion);

await ensureGoBuild({
  log,
  fail,
  root,
  key,
  label: key,
  ready: () => isExecutableFile(join(finalDir, BINARY)),
  what: `the upstream e2e suite (${BINARY})`,
  instead: `set SITS_E2E_BIN to a folder holding ${BINARY} (k8s.io/kubernetes/test/e2e ${k8sVersion})`,
  jobsEnv: 'SITS_K8S_BUILD_JOBS',
  doneMessage: (took) => `done in ${took}: ${finalDir}`,
  async build({ tmpDir, go, goVersion, startedAt }) {
    log(`${BINARY} ${k8sVersion} not found in ${finalDir}; building with ${goVersion}`);
    await go(`${BINARY} ${k8sVersion}`, KUBE_MOD_DIR, ['-o', join(tmpDir, BINARY), '-ldflags', ldflags, 'k8s.io/kubernetes/test/e2e'], { testBinary: true });
    // Sanity check: the binary lists the scheduling cases without a cluster.
    const r = spawnSync(join(tmpDir, BINARY), ['--ginkgo.dry-run', '--ginkgo.focus=SchedulerPredicates', '--ginkgo.no-color', '--provider=skeleton'], { encoding: 'utf8', timeout: 120_000 });
    const out = `${r.stdout ?? ''}${r.stderr ?? ''}`;
    if (!/Ran [1-9]\d* of \d+ Specs/.test(out)) throw new Error(`${BINARY} --ginkgo.dry-run did not list the SchedulerPredicates cases: ${out.trim().slice(-2000) || r.error?.message}`);
    writeFileSync(join(tmpDir, 'BUILD-INFO.json'), `${JSON.stringify({ kubernetes: k8sVersion, go: goVersion, builtAt: new Date().toISOString(), buildSeconds: Math.round((Date.now() - startedAt) / 1000) }, null, 2)}\n`);
  },
});
process.stdout.write(`${finalDir}\n`);
