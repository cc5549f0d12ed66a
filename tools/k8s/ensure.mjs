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
//   so an interrupted build never leaves a half-filled cache.
//
// Environment: SITS_K8S_BIN, XDG_CACHE_HOME, SITS_K8S_BUILD_JOBS (go build -p, default 2).
// Plain Node ESM, no dependencies. See docs/control-plane.md.

import { spawn, spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { clearInterval, setInterval } from 'node:timers';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const BINARIES = ['etcd', 'kube-apiserver', 'kube-scheduler'];
const HERE = dirname(fileURLToPath(import.meta.url));
const KUBE_MOD_DIR = join(HERE, 'kube');
const ETCD_MOD_DIR = join(HERE, 'etcd');
const MIN_GO = [1, 26];

function log(msg) {
  process.stderr.write(`[sits-k8s] ${msg}\n`);
}

function fail(msg) {
  process.stderr.write(`[sits-k8s] error: ${msg}\n`);
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

function missingBinaries(dir) {
  return BINARIES.filter((b) => {
    try {
      accessSync(join(dir, b), constants.X_OK);
      return !statSync(join(dir, b)).isFile();
    } catch {
      return true;
    }
  });
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
// 1. Explicit folder.
const explicit = process.env.SITS_K8S_BIN;
if (explicit) {
  const dir = resolve(explicit);
  if (!existsSync(dir)) fail(`SITS_K8S_BIN=${explicit}: folder does not exist (it must hold ${BINARIES.join(', ')})`);
  const missing = missingBinaries(dir);
  if (missing.length > 0) {
    fail(`SITS_K8S_BIN=${explicit}: missing or not executable: ${missing.map((b) => join(dir, b)).join(', ')}`);
  }
  process.stdout.write(`${dir}\n`);
  process.exit(0);
}

// ---------------------------------------------------------------------------
// 2. Versioned cache folder.
const k8sVersion = requiredVersion(join(KUBE_MOD_DIR, 'go.mod'), 'k8s.io/kubernetes'); // v1.36.3
const etcdVersion = requiredVersion(join(ETCD_MOD_DIR, 'go.mod'), 'go.etcd.io/etcd/server/v3'); // v3.6.16
const key = `${k8sVersion}-etcd${etcdVersion.replace(/^v/, "")}`; // v1.36.3-etcd3.6.16
const cacheHome = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
const root = join(cacheHome, 'sits-k8s');
const finalDir = join(root, key);

if (missingBinaries(finalDir).length === 0) {
  process.stdout.write(`${finalDir}\n`);
  process.exit(0);
}

// ---------------------------------------------------------------------------
// 3. Build. Needs Go.
const goVersion = spawnSync('go', ['env', 'GOVERSION'], { encoding: 'utf8' });
if (goVersion.error || goVersion.status !== 0) {
  fail(
    `cannot build ${BINARIES.join(', ')}: 'go' was not found on PATH` +
      (goVersion.error ? ` (${goVersion.error.code ?? goVersion.error.message})` : '') +
      `.\n  Install Go >= ${MIN_GO.join('.')} and retry, or set SITS_K8S_BIN to a folder` +
      ` holding etcd, kube-apiserver and kube-scheduler (k8s ${k8sVersion}, etcd ${etcdVersion}).`,
  );
}
const gv = /^go(\d+)\.(\d+)/.exec(goVersion.stdout.trim());
if (gv && (Number(gv[1]) < MIN_GO[0] || (Number(gv[1]) === MIN_GO[0] && Number(gv[2]) < MIN_GO[1]))) {
  log(`warning: ${goVersion.stdout.trim()} is older than go${MIN_GO.join('.')}; the build relies on GOTOOLCHAIN to fetch a newer toolchain`);
}

mkdirSync(root, { recursive: true });

// One builder at a time per cache key (parallel test files may all call this script).
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
  if (missingBinaries(finalDir).length === 0) {
    process.stdout.write(`${finalDir}\n`);
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
    log(`another process (pid ${owner}) is building ${key}; waiting…`);
  }
  await sleep(2000);
}

// Re-check under the lock (another process may have finished just now).
if (missingBinaries(finalDir).length === 0) {
  rmSync(lockDir, { recursive: true, force: true });
  process.stdout.write(`${finalDir}\n`);
  process.exit(0);
}

// Leftovers of builds that were killed hard (we hold the lock, so nobody else uses them).
for (const name of readdirSync(root)) {
  if (name.startsWith(`.tmp-${key}-`) || name.startsWith(`.old-${key}-`)) {
    rmSync(join(root, name), { recursive: true, force: true });
  }
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

const jobs = process.env.SITS_K8S_BUILD_JOBS || '2';
const buildEnv = {
  ...process.env,
  CGO_ENABLED: '0',
  // Build exactly what go.mod/go.sum pin; never edit them, never use a workspace.
  GOFLAGS: '-mod=readonly',
  GOWORK: 'off',
};

function goBuild(label, cwd, args) {
  const started = Date.now();
  log(`building ${label} (go build -p ${jobs}); the first build takes many minutes…`);
  return new Promise((resolvePromise, reject) => {
    const child = spawn('go', ['build', '-p', jobs, '-trimpath', '-buildvcs=false', ...args], {
      cwd,
      env: buildEnv,
      stdio: ['ignore', 'pipe', 'inherit'], // stdout is reserved for the folder name
      detached: true, // own process group, so an interrupt can kill the compiler children too
    });
    child.stdout.pipe(process.stderr);
    currentChild = child;
    const timer = setInterval(() => log(`  … still building ${label} (${fmtDuration(Date.now() - started)})`), 30_000);
    child.on('error', (e) => {
      clearInterval(timer);
      reject(e);
    });
    child.on('exit', (code, signal) => {
      clearInterval(timer);
      currentChild = null;
      if (code === 0) {
        log(`built ${label} in ${fmtDuration(Date.now() - started)}`);
        resolvePromise(Date.now() - started);
      } else {
        reject(new Error(`go build of ${label} failed (${signal ?? `exit code ${code}`})`));
      }
    });
  });
}

const kMinor = /^v(\d+)\.(\d+)\./.exec(k8sVersion);
const kubeLdflags = ['-s', '-w'];
for (const pkg of ['k8s.io/component-base/version', 'k8s.io/client-go/pkg/version']) {
  kubeLdflags.push(`-X ${pkg}.gitVersion=${k8sVersion}`, `-X ${pkg}.gitTreeState=clean`);
  if (kMinor) kubeLdflags.push(`-X ${pkg}.gitMajor=${kMinor[1]}`, `-X ${pkg}.gitMinor=${kMinor[2]}`);
}

try {
  const t0 = Date.now();
  log(`binaries for ${key} not found in ${finalDir}; building with ${goVersion.stdout.trim()}`);
  await goBuild(`kube-apiserver + kube-scheduler ${k8sVersion}`, KUBE_MOD_DIR, [
    '-o',
    `${tmpDir}/`,
    '-ldflags',
    kubeLdflags.join(' '),
    'k8s.io/kubernetes/cmd/kube-apiserver',
    'k8s.io/kubernetes/cmd/kube-scheduler',
  ]);
  await goBuild(`etcd ${etcdVersion}`, ETCD_MOD_DIR, ['-o', join(tmpDir, 'etcd'), '-ldflags', '-s -w', '.']);

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
    `${JSON.stringify({ kubernetes: k8sVersion, etcd: etcdVersion, go: goVersion.stdout.trim(), builtAt: new Date().toISOString(), buildSeconds: Math.round((Date.now() - t0) / 1000) }, null, 2)}\n`,
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
  log(`done in ${fmtDuration(Date.now() - t0)}: ${finalDir}`);
} catch (e) {
  cleanup();
  fail(e instanceof Error ? e.message : String(e));
}
cleanup();
process.stdout.write(`${finalDir}\n`);
