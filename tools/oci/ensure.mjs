#!/usr/bin/env node
// Makes sure the daemonless OCI tools exist and prints the folder holding them on the last line of stdout:
//   umoci    (github.com/opencontainers/umoci, cmd/umoci): builds and unpacks OCI image layouts without a daemon;
//   crane    (github.com/google/go-containerregistry, cmd/crane): copies, inspects and pushes images and layouts;
//   registry (github.com/distribution/distribution/v3, cmd/registry): a local OCI registry for push/pull tests
//            (src/harness/oci-registry.ts; `helm push` of the chart).
// Built from the wrapper module next to this script (go.mod's `tool` lines, go.sum committed). The three share
// one module so their common dependencies (x/crypto, x/net, grpc, otel) are compiled once; they build and run
// with the versions Go's MVS picks for the three together. Progress goes to stderr. The same pattern as
// tools/helm/ensure.mjs, sharing tools/lib/cached-build.mjs.
//
//   node tools/oci/ensure.mjs
//
// - If SITS_OCI_BIN is set, it must be a folder holding the three binaries (no build, Go not needed).
// - Otherwise they are cached in ${XDG_CACHE_HOME:-~/.cache}/sits-oci/umoci<v>-crane<v>-registry<v>/ and built
//   (CGO_ENABLED=0) into a temporary folder renamed into place when complete. About 3 minutes on 2 busy cores.
//
// Environment: SITS_OCI_BIN, XDG_CACHE_HOME, SITS_OCI_BUILD_JOBS (go build -p, default 2).
// Plain Node ESM, no dependencies.

import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cacheRoot, ensureGoBuild, isExecutableFile, reporter, requiredVersion, useBinFolder } from '../lib/cached-build.mjs';

const UMOCI_MOD = 'github.com/opencontainers/umoci';
const CRANE_MOD = 'github.com/google/go-containerregistry';
const REGISTRY_MOD = 'github.com/distribution/distribution/v3';
const BINARIES = ['umoci', 'crane', 'registry'];
const HERE = dirname(fileURLToPath(import.meta.url));
const { log, fail } = reporter('sits-oci');

function missingBinaries(dir) {
  return BINARIES.filter((b) => !isExecutableFile(join(dir, b)));
}

useBinFolder('SITS_OCI_BIN', BINARIES, fail);

const goMod = join(HERE, 'go.mod');
const umociVersion = requiredVersion(goMod, UMOCI_MOD, fail); // v0.6.0
const craneVersion = requiredVersion(goMod, CRANE_MOD, fail); // v0.22.1
const registryVersion = requiredVersion(goMod, REGISTRY_MOD, fail); // v3.1.2
const strip = (v) => v.replace(/^v/, '');
const key = `umoci${strip(umociVersion)}-crane${strip(craneVersion)}-registry${strip(registryVersion)}`;
const root = cacheRoot('sits-oci');
const finalDir = join(root, key);

await ensureGoBuild({
  log,
  fail,
  root,
  key,
  label: key,
  ready: () => missingBinaries(finalDir).length === 0,
  what: BINARIES.join(', '),
  instead: `set SITS_OCI_BIN to a folder holding ${BINARIES.join(', ')} (umoci ${umociVersion}, crane ${craneVersion}, distribution ${registryVersion})`,
  jobsEnv: 'SITS_OCI_BUILD_JOBS',
  doneMessage: (took) => `done in ${took}: ${finalDir}`,
  async build({ tmpDir, go, goVersion, startedAt }) {
    log(`${BINARIES.join(', ')} not found in ${finalDir}; building with ${goVersion}`);
    // crane and umoci read their version from the module's build info; distribution's Makefile stamps it, so we do.
    await go(BINARIES.join(', '), HERE, [
      '-o',
      `${tmpDir}/`,
      '-ldflags',
      `-s -w -X ${REGISTRY_MOD}/version.version=${registryVersion} -X ${REGISTRY_MOD}/version.mainpkg=${REGISTRY_MOD}`,
      `${UMOCI_MOD}/cmd/umoci`,
      `${CRANE_MOD}/cmd/crane`,
      `${REGISTRY_MOD}/cmd/registry`,
    ]);
    for (const [bin, args, want] of [
      ['umoci', ['--version'], strip(umociVersion)],
      ['crane', ['version'], craneVersion],
      ['registry', ['--version'], registryVersion],
    ]) {
      const r = spawnSync(join(tmpDir, bin), args, { encoding: 'utf8' });
      const out = `${r.stdout ?? ''}${r.stderr ?? ''}`;
      if (r.status !== 0 || !out.includes(want)) throw new Error(`${bin} ${args.join(' ')} does not report version ${want}: ${out.trim() || r.error?.message}`);
    }
    const info = {
      umoci: umociVersion,
      crane: craneVersion,
      registry: registryVersion,
      go: goVersion,
      builtAt: new Date().toISOString(),
      buildSeconds: Math.round((Date.now() - startedAt) / 1000),
    };
    writeFileSync(join(tmpDir, 'BUILD-INFO.json'), `${JSON.stringify(info, null, 2)}\n`);
  },
});
process.stdout.write(`${finalDir}\n`);
