#!/usr/bin/env node
// Makes sure kube-controller-manager exists and prints the folder holding it on the last line of stdout.
// Built from the same wrapper module as kube-apiserver (tools/k8s/kube), cached apart from the control plane
// so adding it did not invalidate the etcd/apiserver/scheduler cache:
//   ${XDG_CACHE_HOME:-~/.cache}/sits-k8s/<k8s version>-controller-manager/
// Environment: SITS_KCM_BIN (a folder that must hold kube-controller-manager; no build), XDG_CACHE_HOME,
// SITS_K8S_BUILD_JOBS. Plain Node ESM, no dependencies.

import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cacheRoot, ensureGoBuild, isExecutableFile, kubeVersionLdflags, reporter, requiredVersion, useBinFolder } from '../lib/cached-build.mjs';

const BINARY = 'kube-controller-manager';
const HERE = dirname(fileURLToPath(import.meta.url));
const KUBE_MOD_DIR = join(HERE, 'kube');
const { log, fail } = reporter('sits-kcm');

useBinFolder('SITS_KCM_BIN', [BINARY], fail);

const k8sVersion = requiredVersion(join(KUBE_MOD_DIR, 'go.mod'), 'k8s.io/kubernetes', fail);
const key = `${k8sVersion}-controller-manager`;
const root = cacheRoot('sits-k8s');
const finalDir = join(root, key);

await ensureGoBuild({
  log,
  fail,
  root,
  key,
  label: key,
  ready: () => isExecutableFile(join(finalDir, BINARY)),
  what: BINARY,
  instead: `set SITS_KCM_BIN to a folder holding ${BINARY} (k8s ${k8sVersion})`,
  jobsEnv: 'SITS_K8S_BUILD_JOBS',
  doneMessage: (took) => `done in ${took}: ${finalDir}`,
  async build({ tmpDir, go, goVersion, startedAt }) {
    log(`${BINARY} ${k8sVersion} not found in ${finalDir}; building with ${goVersion}`);
    await go(`${BINARY} ${k8sVersion}`, KUBE_MOD_DIR, ['-o', `${tmpDir}/`, '-ldflags', kubeVersionLdflags(k8sVersion), `k8s.io/kubernetes/cmd/${BINARY}`]);
    const r = spawnSync(join(tmpDir, BINARY), ['--version'], { encoding: 'utf8' });
    const out = `${r.stdout ?? ''}${r.stderr ?? ''}`;
    if (r.status !== 0 || !out.includes(k8sVersion)) throw new Error(`${BINARY} --version did not report ${k8sVersion}: ${out.trim() || r.error?.message}`);
    writeFileSync(join(tmpDir, 'BUILD-INFO.json'), `${JSON.stringify({ kubernetes: k8sVersion, go: goVersion, builtAt: new Date().toISOString(), buildSeconds: Math.round((Date.now() - startedAt) / 1000) }, null, 2)}\n`);
  },
});
process.stdout.write(`${finalDir}\n`);
