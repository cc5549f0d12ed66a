#!/usr/bin/env node
// Makes sure a `helm` binary exists and prints its path on the last line of stdout. Progress goes to
// stderr. The same pattern as tools/k8s/ensure.mjs, sharing tools/lib/cached-build.mjs (see
// docs/adr/0030-helm-binary.md).
//
//   node tools/helm/ensure.mjs
//
// - If SITS_HELM is set, it must be an executable (no build).
// - Otherwise the binary is cached in ${XDG_CACHE_HOME:-~/.cache}/sits-helm/<helm version>/helm and built
//   from the Go wrapper module next to this script (go.mod's `tool helm.sh/helm/v3/cmd/helm`) when
//   missing. The version is read from go.mod. The build goes to a temporary folder that is renamed into
//   place only when complete, so an interrupted build never leaves a half-filled cache.
//
// Environment: SITS_HELM, XDG_CACHE_HOME, SITS_HELM_BUILD_JOBS (go build -p, default 2).
// Plain Node ESM, no dependencies.

import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureGoBuild, isExecutableFile, reporter, requiredVersion, useOverride } from '../lib/cached-build.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const { log, fail } = reporter('sits-helm');

// ---------------------------------------------------------------------------
// 1. Explicit binary.
useOverride('SITS_HELM', (explicit) => {
  const path = resolve(explicit);
  if (!isExecutableFile(path)) fail(`SITS_HELM=${explicit}: not an executable file (it must be a helm binary)`);
  return path;
});

// ---------------------------------------------------------------------------
// 2. Versioned cache folder, 3. built when missing.
const goMod = join(HERE, 'go.mod');
const helmVersion = requiredVersion(goMod, 'helm.sh/helm/v3', fail); // v3.22.0
const clientGoVersion = requiredVersion(goMod, 'k8s.io/client-go', fail); // v0.37.0
const key = helmVersion;
const cacheHome = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
const root = join(cacheHome, 'sits-helm');
const finalDir = join(root, key);
const finalBin = join(finalDir, 'helm');

// As Helm's Makefile does: the version `helm version` prints, and the Kubernetes version that
// `helm template` and `helm lint` assume without a cluster (client-go v0.N → 1.N; otherwise Helm
// assumes 1.20 and the chart's kubeVersion '>=1.29.0-0' would not match).
const cg = /^v(\d+)\.(\d+)\./.exec(clientGoVersion);
if (!cg) fail(`unexpected k8s.io/client-go version ${clientGoVersion} in ${goMod}`);
const k8sMajor = String(Number(cg[1]) + 1);
const k8sMinor = cg[2];
const ldflags = ['-s', '-w', `-X helm.sh/helm/v3/internal/version.version=${helmVersion}`, '-X helm.sh/helm/v3/internal/version.gitTreeState=clean'];
for (const pkg of ['helm.sh/helm/v3/pkg/lint/rules', 'helm.sh/helm/v3/pkg/chartutil'])
  ldflags.push(`-X ${pkg}.k8sVersionMajor=${k8sMajor}`, `-X ${pkg}.k8sVersionMinor=${k8sMinor}`);

await ensureGoBuild({
  log,
  fail,
  root,
  key,
  label: `helm ${key}`,
  ready: () => isExecutableFile(finalBin),
  what: 'helm',
  instead: `set SITS_HELM to a helm binary (${helmVersion})`,
  jobsEnv: 'SITS_HELM_BUILD_JOBS',
  doneMessage: (took) => `built helm ${helmVersion} in ${took}: ${finalBin}`,
  async build({ tmpDir, go, goVersion, jobs, startedAt }) {
    log(`helm ${helmVersion} not found in ${finalDir}; building with ${goVersion} (go build -p ${jobs}); the first build takes a few minutes…`);
    await go(`helm ${helmVersion}`, HERE, ['-o', join(tmpDir, 'helm'), '-ldflags', ldflags.join(' '), 'helm.sh/helm/v3/cmd/helm'], { quiet: true });

    // Sanity check: the binary runs and reports the expected version.
    const r = spawnSync(join(tmpDir, 'helm'), ['version', '--short'], {
      encoding: 'utf8',
      env: { ...process.env, HELM_CONFIG_HOME: tmpDir, HELM_CACHE_HOME: tmpDir, HELM_DATA_HOME: tmpDir },
    });
    const out = `${r.stdout ?? ''}${r.stderr ?? ''}`;
    if (r.status !== 0 || !out.includes(helmVersion)) throw new Error(`helm version did not report ${helmVersion}: ${out.trim() || r.error?.message}`);
    writeFileSync(
      join(tmpDir, 'BUILD-INFO.json'),
      `${JSON.stringify({ helm: helmVersion, kubeVersion: `v${k8sMajor}.${k8sMinor}.0`, go: goVersion, builtAt: new Date().toISOString(), buildSeconds: Math.round((Date.now() - startedAt) / 1000) }, null, 2)}\n`,
    );
  },
});
process.stdout.write(`${finalBin}\n`);
