#!/usr/bin/env node
// Makes sure etcd, kube-apiserver and kube-scheduler binaries exist and prints the
// folder holding them on the last line of stdout. Progress goes to stderr.
//
//   node tools/k8s/ensure.mjs
//
// - If SITS_K8S_BIN is set, that folder must hold all three binaries (no build).
// - Otherwise binaries are cached in
//   ${XDG_CACHE_HOME:-~/.cache}/sits-k8s/<k8s version>-etcd<etcd version>/
//   and built from the Go wrapper modules next to this script (tools/k8s/kube,
//   tools/k8s/etcd) when missing. Versions are read from their go.mod files.
//   Builds go to a temporary folder that is renamed into place only when complete,
//   so an interrupted build never leaves a half-filled cache (tools/lib/cached-build.mjs).
//
// Environment: SITS_K8S_BIN, XDG_CACHE_HOME, SITS_K8S_BUILD_JOBS (go build -p, default 2).
// Plain Node ESM, no dependencies. See docs/control-plane.md.

import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cacheRoot, ensureGoBuild, isExecutableFile, kubeVersionLdflags, reporter, requiredVersion, useBinFolder } from '../lib/cached-build.mjs';

const BINARIES = ['etcd', 'kube-apiserver', 'kube-scheduler'];
const HERE = dirname(fileURLToPath(import.meta.url));
const KUBE_MOD_DIR = join(HERE, 'kube');
const ETCD_MOD_DIR = join(HERE, 'etcd');
const { log, fail } = reporter('sits-k8s');

function missingBinaries(dir) {
  return BINARIES.filter((b) => !isExecutableFile(join(dir, b)));
}

// ---------------------------------------------------------------------------
// 1. Explicit folder.
useBinFolder('SITS_K8S_BIN', BINARIES, fail);

// ---------------------------------------------------------------------------
// 2. Versioned cache folder, 3. built when missing.
const k8sVersion = requiredVersion(join(KUBE_MOD_DIR, 'go.mod'), 'k8s.io/kubernetes', fail); // v1.36.3
const etcdVersion = requiredVersion(join(ETCD_MOD_DIR, 'go.mod'), 'go.etcd.io/etcd/server/v3', fail); // v3.6.16
const key = `${k8sVersion}-etcd${etcdVersion.replace(/^v/, '')}`; // v1.36.3-etcd3.6.16
const root = cacheRoot('sits-k8s');
const finalDir = join(root, key);

await ensureGoBuild({
  log,
  fail,
  root,
  key,
  label: key,
  ready: () => missingBinaries(finalDir).length === 0,
  what: BINARIES.join(', '),
  instead: `set SITS_K8S_BIN to a folder holding etcd, kube-apiserver and kube-scheduler (k8s ${k8sVersion}, etcd ${etcdVersion})`,
  jobsEnv: 'SITS_K8S_BUILD_JOBS',
  doneMessage: (took) => `done in ${took}: ${finalDir}`,
  async build({ tmpDir, go, goVersion, startedAt }) {
    log(`binaries for ${key} not found in ${finalDir}; building with ${goVersion}`);
    await go(`kube-apiserver + kube-scheduler ${k8sVersion}`, KUBE_MOD_DIR, [
      '-o',
      `${tmpDir}/`,
      '-ldflags',
      kubeVersionLdflags(k8sVersion),
      'k8s.io/kubernetes/cmd/kube-apiserver',
      'k8s.io/kubernetes/cmd/kube-scheduler',
    ]);
    await go(`etcd ${etcdVersion}`, ETCD_MOD_DIR, ['-o', join(tmpDir, 'etcd'), '-ldflags', '-s -w', '.']);

    // Sanity check: each binary runs and reports the expected version.
    const checks = [
      ['kube-apiserver', k8sVersion],
      ['kube-scheduler', k8sVersion],
      ['etcd', etcdVersion.replace(/^v/, '')],
    ];
    for (const [bin, want] of checks) {
      const r = spawnSync(join(tmpDir, bin), ['--version'], { encoding: 'utf8' });
      const out = `${r.stdout ?? ''}${r.stderr ?? ''}`;
      if (r.status !== 0 || !out.includes(want)) {
        throw new Error(`${bin} --version did not report ${want}: ${out.trim() || r.error?.message}`);
      }
    }
    writeFileSync(
      join(tmpDir, 'BUILD-INFO.json'),
      `${JSON.stringify({ kubernetes: k8sVersion, etcd: etcdVersion, go: goVersion, builtAt: new Date().toISOString(), buildSeconds: Math.round((Date.now() - startedAt) / 1000) }, null, 2)}\n`,
    );
  },
});
process.stdout.write(`${finalDir}\n`);
