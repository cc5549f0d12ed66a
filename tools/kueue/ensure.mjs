#!/usr/bin/env node
// Makes sure Kueue's manager (sigs.k8s.io/kueue/cmd/kueue, the peer of issue 32's live bench) exists and prints
// the folder holding it on the last line of stdout. Built from the wrapper module next to this script
// (tools/kueue/mod pins sigs.k8s.io/kueue and everything it needs), cached by version with Kueue's CRDs
// (config/components/crd/bases/*.yaml of the same module, copied from the Go module cache):
//   ${XDG_CACHE_HOME:-~/.cache}/sits-kueue/<kueue version>/{kueue,crds/*.yaml,BUILD-INFO.json}
// Environment: SITS_KUEUE_BIN (a folder that must hold kueue and crds/; no build), XDG_CACHE_HOME,
// SITS_K8S_BUILD_JOBS. Plain Node ESM, no dependencies.

import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cacheRoot, ensureGoBuild, isExecutableFile, reporter, requiredVersion, useOverride } from '../lib/cached-build.mjs';

const MOD = 'sigs.k8s.io/kueue';
const BINARY = 'kueue';
const MOD_DIR = join(dirname(fileURLToPath(import.meta.url)), 'mod');
const { log, fail } = reporter('sits-kueue');

function crdFiles(dir) {
  return existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.yaml')) : [];
}

useOverride('SITS_KUEUE_BIN', (explicit) => {
  const dir = resolve(explicit);
  if (!isExecutableFile(join(dir, BINARY))) fail(`SITS_KUEUE_BIN=${explicit}: ${join(dir, BINARY)} is missing or not executable`);
  if (crdFiles(join(dir, 'crds')).length === 0) fail(`SITS_KUEUE_BIN=${explicit}: ${join(dir, 'crds')} holds no *.yaml (Kueue's CRDs)`);
  return dir;
});

const version = requiredVersion(join(MOD_DIR, 'go.mod'), MOD, fail); // v0.17.0
const root = cacheRoot('sits-kueue');
const finalDir = join(root, version);

await ensureGoBuild({
  log,
  fail,
  root,
  key: version,
  label: `kueue ${version}`,
  ready: () => isExecutableFile(join(finalDir, BINARY)) && crdFiles(join(finalDir, 'crds')).length > 0,
  what: 'the Kueue manager',
  instead: `set SITS_KUEUE_BIN to a folder holding ${BINARY} (${MOD} ${version}) and crds/ (its config/components/crd/bases)`,
  jobsEnv: 'SITS_K8S_BUILD_JOBS',
  doneMessage: (took) => `done in ${took}: ${finalDir}`,
  async build({ tmpDir, go, goVersion, startedAt }) {
    log(`kueue ${version} not found in ${finalDir}; building with ${goVersion}`);
    const ldflags = `-s -w -X ${MOD}/pkg/version.GitVersion=${version}`;
    await go(`kueue ${version}`, MOD_DIR, ['-o', join(tmpDir, BINARY), '-ldflags', ldflags, `${MOD}/cmd/kueue`]);
    // The binary has no --version flag; its embedded build info names the module version it was built from.
    const info = spawnSync('go', ['version', '-m', join(tmpDir, BINARY)], { encoding: 'utf8' });
    if (info.status !== 0 || !new RegExp(`\\s${MOD.replace(/[./]/g, '\\$&')}\\s+${version.replace(/\./g, '\\.')}\\s`).test(info.stdout)) {
      throw new Error(`go version -m ${BINARY} does not name ${MOD} ${version}: ${(info.stdout + info.stderr).trim().slice(0, 400)}`);
    }
    // The CRDs of the same module version, from the module cache (the build just downloaded it).
    const modCache = spawnSync('go', ['env', 'GOMODCACHE'], { encoding: 'utf8' }).stdout.trim();
    const crdSrc = join(modCache, `${MOD}@${version}`, 'config', 'components', 'crd', 'bases');
    const crds = crdFiles(crdSrc);
    if (crds.length === 0) throw new Error(`no CRDs (*.yaml) in ${crdSrc}`);
    mkdirSync(join(tmpDir, 'crds'));
    for (const f of crds) {
      copyFileSync(join(crdSrc, f), join(tmpDir, 'crds', f));
      chmodSync(join(tmpDir, 'crds', f), 0o644); // the module cache's files are read-only
    }
    writeFileSync(
      join(tmpDir, 'BUILD-INFO.json'),
      `${JSON.stringify({ kueue: version, go: goVersion, crds, builtAt: new Date().toISOString(), buildSeconds: Math.round((Date.now() - startedAt) / 1000) }, null, 2)}\n`,
    );
  },
});
process.stdout.write(`${finalDir}\n`);
