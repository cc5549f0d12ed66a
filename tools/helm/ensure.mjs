#!/usr/bin/env node
// Makes sure a `helm` binary exists and prints its path on the last line of stdout. Progress goes to
// stderr. The same pattern as tools/k8s/ensure.mjs (see docs/adr/0030-helm-binary.md).
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

import { spawn, spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { clearInterval, setInterval } from 'node:timers';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));
const MIN_GO = [1, 26];

function log(msg) {
  process.stderr.write(`[sits-helm] ${msg}\n`);
}

function fail(msg) {
  process.stderr.write(`[sits-helm] error: ${msg}\n`);
  process.exit(1);
}

function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

/** Reads the required version of `modPath` from a go.mod file. */
function requiredVersion(goModFile, modPath) {
  const text = readFileSync(goModFile, 'utf8');
  const esc = modPath.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  const m = new RegExp(`^\\s*(?:require\\s+)?${esc}\\s+(v\\S+)`, 'm').exec(text);
  if (!m) fail(`cannot find the required version of ${modPath} in ${goModFile}`);
  return m[1];
}

function executable(path) {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

function processAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code === 'EPERM';
  }
}

function fmtDuration(ms) {
  const s = Math.round(ms / 1000);
  return s >= 60 ? `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s` : `${s}s`;
}

// ---------------------------------------------------------------------------
// 1. Explicit binary.
const explicit = process.env.SITS_HELM;
if (explicit) {
  const path = resolve(explicit);
  if (!executable(path)) fail(`SITS_HELM=${explicit}: not an executable file (it must be a helm binary)`);
  process.stdout.write(`${path}\n`);
  process.exit(0);
}

// ---------------------------------------------------------------------------
// 2. Versioned cache folder.
const goMod = join(HERE, 'go.mod');
const helmVersion = requiredVersion(goMod, 'helm.sh/helm/v3'); // v3.22.0
const clientGoVersion = requiredVersion(goMod, 'k8s.io/client-go'); // v0.37.0
const key = helmVersion;
const cacheHome = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
const root = join(cacheHome, 'sits-helm');
const finalDir = join(root, key);
const finalBin = join(finalDir, 'helm');

if (executable(finalBin)) {
  process.stdout.write(`${finalBin}\n`);
  process.exit(0);
}

// ---------------------------------------------------------------------------
// 3. Build. Needs Go.
const goVersion = spawnSync('go', ['env', 'GOVERSION'], { encoding: 'utf8' });
if (goVersion.error || goVersion.status !== 0) {
  fail(
    `cannot build helm: 'go' was not found on PATH` +
      (goVersion.error ? ` (${goVersion.error.code ?? goVersion.error.message})` : '') +
      `.\n  Install Go >= ${MIN_GO.join('.')} and retry, or set SITS_HELM to a helm binary (${helmVersion}).`,
  );
}
const gv = /^go(\d+)\.(\d+)/.exec(goVersion.stdout.trim());
if (gv && (Number(gv[1]) < MIN_GO[0] || (Number(gv[1]) === MIN_GO[0] && Number(gv[2]) < MIN_GO[1]))) {
  log(`warning: ${goVersion.stdout.trim()} is older than go${MIN_GO.join('.')}; the build relies on GOTOOLCHAIN to fetch a newer toolchain`);
}

mkdirSync(root, { recursive: true });

// One builder at a time per version (parallel test files may all call this script).
const lockDir = join(root, `.lock-${key}`);
let lockHeld = false;
let waitingSince = 0;
for (;;) {
  try {
    mkdirSync(lockDir);
    writeFileSync(join(lockDir, 'pid'), String(process.pid));
    lockHeld = true;
    break;
  } catch (e) {
    if (e.code !== 'EEXIST') throw e;
  }
  if (executable(finalBin)) {
    process.stdout.write(`${finalBin}\n`);
    process.exit(0);
  }
  let owner = NaN;
  try {
    owner = Number(readFileSync(join(lockDir, 'pid'), 'utf8'));
  } catch {
    // lock folder created but pid not yet written
  }
  const lockAge = Date.now() - (statSync(lockDir, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
  if ((Number.isInteger(owner) && owner > 0 && !processAlive(owner)) || (!Number.isInteger(owner) && lockAge > 30_000)) {
    log(`removing stale build lock ${lockDir}`);
    rmSync(lockDir, { recursive: true, force: true });
    continue;
  }
  if (!waitingSince) {
    waitingSince = Date.now();
    log(`another process (pid ${owner}) is building helm ${key}; waiting…`);
  }
  await sleep(2000);
}

// Re-check under the lock (another process may have finished just now).
if (executable(finalBin)) {
  rmSync(lockDir, { recursive: true, force: true });
  process.stdout.write(`${finalBin}\n`);
  process.exit(0);
}

// Leftovers of builds that were killed hard (we hold the lock, so nobody else uses them).
for (const name of readdirSync(root)) {
  if (name.startsWith(`.tmp-${key}-`) || name.startsWith(`.old-${key}-`)) rmSync(join(root, name), { recursive: true, force: true });
}

const tmpDir = join(root, `.tmp-${key}-${process.pid}`);
mkdirSync(tmpDir, { recursive: true });
let currentChild = null;

function cleanup() {
  rmSync(tmpDir, { recursive: true, force: true });
  if (lockHeld) rmSync(lockDir, { recursive: true, force: true });
  lockHeld = false;
}
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(sig, () => {
    log(`interrupted (${sig}); removing partial build`);
    if (currentChild?.pid) {
      try {
        process.kill(-currentChild.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    cleanup();
    process.exit(130);
  });
}

const jobs = process.env.SITS_HELM_BUILD_JOBS || '2';
const buildEnv = {
  ...process.env,
  CGO_ENABLED: '0',
  // Build exactly what go.mod/go.sum pin; never edit them, never use a workspace.
  GOFLAGS: '-mod=readonly',
  GOWORK: 'off',
};

// As Helm's Makefile does: the version `helm version` prints, and the Kubernetes version that
// `helm template` and `helm lint` assume without a cluster (client-go v0.N → 1.N; otherwise Helm
// assumes 1.20 and the chart's kubeVersion '>=1.29.0-0' would not match).
const cg = /^v(\d+)\.(\d+)\./.exec(clientGoVersion);
if (!cg) fail(`unexpected k8s.io/client-go version ${clientGoVersion} in ${goMod}`);
const k8sMajor = String(Number(cg[1]) + 1);
const k8sMinor = cg[2];
const ldflags = ['-s', '-w', `-X helm.sh/helm/v3/internal/version.version=${helmVersion}`, '-X helm.sh/helm/v3/internal/version.gitTreeState=clean'];
for (const pkg of ['helm.sh/helm/v3/pkg/lint/rules', 'helm.sh/helm/v3/pkg/chartutil']) ldflags.push(`-X ${pkg}.k8sVersionMajor=${k8sMajor}`, `-X ${pkg}.k8sVersionMinor=${k8sMinor}`);

try {
  const t0 = Date.now();
  log(`helm ${helmVersion} not found in ${finalDir}; building with ${goVersion.stdout.trim()} (go build -p ${jobs}); the first build takes a few minutes…`);
  await new Promise((resolvePromise, reject) => {
    const child = spawn('go', ['build', '-p', jobs, '-trimpath', '-buildvcs=false', '-o', join(tmpDir, 'helm'), '-ldflags', ldflags.join(' '), 'helm.sh/helm/v3/cmd/helm'], {
      cwd: HERE,
      env: buildEnv,
      stdio: ['ignore', 'pipe', 'inherit'], // stdout is reserved for the binary path
      detached: true, // own process group, so an interrupt can kill the compiler children too
    });
    child.stdout.pipe(process.stderr);
    currentChild = child;
    const timer = setInterval(() => log(`  … still building helm ${helmVersion} (${fmtDuration(Date.now() - t0)})`), 30_000);
    child.on('error', (e) => {
      clearInterval(timer);
      reject(e);
    });
    child.on('exit', (code, signal) => {
      clearInterval(timer);
      currentChild = null;
      if (code === 0) resolvePromise();
      else reject(new Error(`go build of helm ${helmVersion} failed (${signal ?? `exit code ${code}`})`));
    });
  });

  // Sanity check: the binary runs and reports the expected version.
  const r = spawnSync(join(tmpDir, 'helm'), ['version', '--short'], { encoding: 'utf8', env: { ...process.env, HELM_CONFIG_HOME: tmpDir, HELM_CACHE_HOME: tmpDir, HELM_DATA_HOME: tmpDir } });
  const out = `${r.stdout ?? ''}${r.stderr ?? ''}`;
  if (r.status !== 0 || !out.includes(helmVersion)) throw new Error(`helm version did not report ${helmVersion}: ${out.trim() || r.error?.message}`);
  writeFileSync(
    join(tmpDir, 'BUILD-INFO.json'),
    `${JSON.stringify({ helm: helmVersion, kubeVersion: `v${k8sMajor}.${k8sMinor}.0`, go: goVersion.stdout.trim(), builtAt: new Date().toISOString(), buildSeconds: Math.round((Date.now() - t0) / 1000) }, null, 2)}\n`,
  );

  // Atomic publish: rename the complete folder into place.
  if (existsSync(finalDir)) {
    const old = join(root, `.old-${key}-${process.pid}`);
    renameSync(finalDir, old);
    renameSync(tmpDir, finalDir);
    rmSync(old, { recursive: true, force: true });
  } else {
    renameSync(tmpDir, finalDir);
  }
  log(`built helm ${helmVersion} in ${fmtDuration(Date.now() - t0)}: ${finalBin}`);
} catch (e) {
  cleanup();
  fail(e instanceof Error ? e.message : String(e));
}
cleanup();
process.stdout.write(`${finalBin}\n`);
