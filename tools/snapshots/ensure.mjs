#!/usr/bin/env node
// Makes sure the CSI snapshot components exist and prints the folder holding them on the last line of stdout:
//   snapshot-controller, csi-snapshotter (github.com/kubernetes-csi/external-snapshotter/v8) and
//   csi-sanity (github.com/kubernetes-csi/csi-test/v5), built from the wrapper module next to this script
//   (tools/snapshots/go.mod pins k8s.io/* at v0.36.2: without the pins Go pulls apimachinery v0.37 and the
//   build breaks; docs/snapshots.md). Cached by version, apart from the control plane:
//   ${XDG_CACHE_HOME:-~/.cache}/sits-snapshots/snapshotter<v>-csi-test<v>/
// Environment: SITS_SNAPSHOTS_BIN (a folder that must hold the three binaries; no build), XDG_CACHE_HOME,
// SITS_K8S_BUILD_JOBS. Plain Node ESM, no dependencies.

import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cacheRoot, ensureGoBuild, isExecutableFile, reporter, requiredVersion, useBinFolder } from '../lib/cached-build.mjs';

const SNAPSHOTTER_MOD = 'github.com/kubernetes-csi/external-snapshotter/v8';
const CSI_TEST_MOD = 'github.com/kubernetes-csi/csi-test/v5';
const BINARIES = ['snapshot-controller', 'csi-snapshotter', 'csi-sanity'];
const HERE = dirname(fileURLToPath(import.meta.url));
const { log, fail } = reporter('sits-snapshots');

function missingBinaries(dir) {
  return BINARIES.filter((b) => !isExecutableFile(join(dir, b)));
}

useBinFolder('SITS_SNAPSHOTS_BIN', BINARIES, fail);

const snapshotterVersion = requiredVersion(join(HERE, 'go.mod'), SNAPSHOTTER_MOD, fail); // v8.6.0
const csiTestVersion = requiredVersion(join(HERE, 'go.mod'), CSI_TEST_MOD, fail); // v5.6.0
const key = `snapshotter${snapshotterVersion.replace(/^v/, '')}-csi-test${csiTestVersion.replace(/^v/, '')}`;
const root = cacheRoot('sits-snapshots');
const finalDir = join(root, key);

await ensureGoBuild({
  log,
  fail,
  root,
  key,
  label: key,
  ready: () => missingBinaries(finalDir).length === 0,
  what: BINARIES.join(', '),
  instead: `set SITS_SNAPSHOTS_BIN to a folder holding ${BINARIES.join(', ')} (external-snapshotter ${snapshotterVersion}, csi-test ${csiTestVersion})`,
  jobsEnv: 'SITS_K8S_BUILD_JOBS',
  doneMessage: (took) => `done in ${took}: ${finalDir}`,
  async build({ tmpDir, go, goVersion, startedAt }) {
    log(`${BINARIES.join(', ')} not found in ${finalDir}; building with ${goVersion}`);
    // One `go build` for the three mains: they share most of client-go, so it is compiled once.
    await go(`${BINARIES.join(', ')}`, HERE, [
      '-o',
      `${tmpDir}/`,
      '-ldflags',
      `-s -w -X main.version=${snapshotterVersion} -X main.VERSION=${csiTestVersion}`,
      `${SNAPSHOTTER_MOD}/cmd/snapshot-controller`,
      `${SNAPSHOTTER_MOD}/cmd/csi-snapshotter`,
      `${CSI_TEST_MOD}/cmd/csi-sanity`,
    ]);
    for (const [bin, want] of [
      ['snapshot-controller', snapshotterVersion],
      ['csi-snapshotter', snapshotterVersion],
      ['csi-sanity', csiTestVersion],
    ]) {
      const r = spawnSync(join(tmpDir, bin), ['--version'], { encoding: 'utf8' });
      const out = `${r.stdout ?? ''}${r.stderr ?? ''}`;
      if (!out.includes(want)) throw new Error(`${bin} does not report version ${want}: ${out.trim() || r.error?.message}`);
    }
    const info = {
      externalSnapshotter: snapshotterVersion,
      csiTest: csiTestVersion,
      go: goVersion,
      builtAt: new Date().toISOString(),
      buildSeconds: Math.round((Date.now() - startedAt) / 1000),
    };
    writeFileSync(join(tmpDir, 'BUILD-INFO.json'), `${JSON.stringify(info, null, 2)}\n`);
  },
});
process.stdout.write(`${finalDir}\n`);
