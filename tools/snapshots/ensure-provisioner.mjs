#!/usr/bin/env node
// Makes sure csi-provisioner (github.com/kubernetes-csi/external-provisioner/v6) exists and prints the folder holding
// it on the last line of stdout. It turns a PVC whose dataSource is a VolumeSnapshot into a CreateVolume with that
// snapshot as content source: the real restore path. Built from its own wrapper module (tools/snapshots/provisioner:
// v6.3.0 is the newest on k8s.io/* v0.36; v6.4.0 needs v0.37), cached apart from the snapshot components:
//   ${XDG_CACHE_HOME:-~/.cache}/sits-snapshots/csi-provisioner<v>/
// Environment: SITS_CSI_PROVISIONER_BIN (a folder that must hold csi-provisioner; no build), XDG_CACHE_HOME,
// SITS_K8S_BUILD_JOBS. Plain Node ESM, no dependencies.

import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cacheRoot, ensureGoBuild, isExecutableFile, reporter, requiredVersion, useBinFolder } from '../lib/cached-build.mjs';

const MOD = 'github.com/kubernetes-csi/external-provisioner/v6';
const BINARY = 'csi-provisioner';
const MOD_DIR = join(dirname(fileURLToPath(import.meta.url)), 'provisioner');
const { log, fail } = reporter('sits-csi-provisioner');

useBinFolder('SITS_CSI_PROVISIONER_BIN', [BINARY], fail);

const version = requiredVersion(join(MOD_DIR, 'go.mod'), MOD, fail); // v6.3.0
const key = `csi-provisioner${version.replace(/^v/, '')}`;
const root = cacheRoot('sits-snapshots');
const finalDir = join(root, key);

await ensureGoBuild({
  log,
  fail,
  root,
  key,
  label: key,
  ready: () => isExecutableFile(join(finalDir, BINARY)),
  what: BINARY,
  instead: `set SITS_CSI_PROVISIONER_BIN to a folder holding ${BINARY} (external-provisioner ${version})`,
  jobsEnv: 'SITS_K8S_BUILD_JOBS',
  doneMessage: (took) => `done in ${took}: ${finalDir}`,
  async build({ tmpDir, go, goVersion, startedAt }) {
    log(`${BINARY} ${version} not found in ${finalDir}; building with ${goVersion}`);
    await go(`${BINARY} ${version}`, MOD_DIR, ['-o', `${tmpDir}/`, '-ldflags', `-s -w -X main.version=${version}`, `${MOD}/cmd/${BINARY}`]);
    const r = spawnSync(join(tmpDir, BINARY), ['--version'], { encoding: 'utf8' });
    const out = `${r.stdout ?? ''}${r.stderr ?? ''}`;
    if (!out.includes(version)) throw new Error(`${BINARY} --version did not report ${version}: ${out.trim() || r.error?.message}`);
    writeFileSync(
      join(tmpDir, 'BUILD-INFO.json'),
      `${JSON.stringify({ externalProvisioner: version, go: goVersion, builtAt: new Date().toISOString(), buildSeconds: Math.round((Date.now() - startedAt) / 1000) }, null, 2)}\n`,
    );
  },
});
process.stdout.write(`${finalDir}\n`);
