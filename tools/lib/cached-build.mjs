// What the tools/<name>/ensure.mjs scripts share: stderr reporting with a tag, the env override that
// skips everything, and a versioned cache folder filled by `go build` under a lock. Each script keeps
// its own versions, checks and messages; stdout stays reserved for the one path it prints last.
// Plain Node ESM, no dependencies.

import { spawn, spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { clearInterval, setInterval } from 'node:timers';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

const MIN_GO = [1, 26];

/** `log` and `fail` (exit 1) that write `[tag] …` lines to stderr. */
export function reporter(tag) {
  return {
    log(msg) {
      process.stderr.write(`[${tag}] ${msg}\n`);
    },
    fail(msg) {
      process.stderr.write(`[${tag}] error: ${msg}\n`);
      process.exit(1);
    },
  };
}

/** When the environment variable `name` is set: prints what `check(value)` returns and exits 0 (`check` fails for a bad value). */
export function useOverride(name, check) {
  const value = process.env[name];
  if (!value) return;
  process.stdout.write(`${check(value)}\n`);
  process.exit(0);
}

/**
 * The override of a tool that builds binaries: when `name` is set, it must name a folder holding every one of
 * `binaries` (executable); that folder is printed and nothing is built. Fails naming the missing ones.
 */
export function useBinFolder(name, binaries, fail) {
  useOverride(name, (explicit) => {
    const dir = resolve(explicit);
    if (!existsSync(dir)) fail(`${name}=${explicit}: folder does not exist (it must hold ${binaries.join(', ')})`);
    const missing = binaries.filter((b) => !isExecutableFile(join(dir, b)));
    if (missing.length > 0) fail(`${name}=${explicit}: missing or not executable: ${missing.map((b) => join(dir, b)).join(', ')}`);
    return dir;
  });
}

/** `${XDG_CACHE_HOME:-~/.cache}/<name>`: where a tool keeps its builds, one folder per version key. */
export function cacheRoot(name) {
  return join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), name);
}

/**
 * -ldflags of a Kubernetes binary: stripped, with the version stamped as a release build stamps it (both
 * component-base and client-go), so `--version` and version checks against the server read it.
 */
export function kubeVersionLdflags(version) {
  const flags = ['-s', '-w'];
  const minor = /^v(\d+)\.(\d+)\./.exec(version);
  for (const pkg of ['k8s.io/component-base/version', 'k8s.io/client-go/pkg/version']) {
    flags.push(`-X ${pkg}.gitVersion=${version}`, `-X ${pkg}.gitTreeState=clean`);
    if (minor) flags.push(`-X ${pkg}.gitMajor=${minor[1]}`, `-X ${pkg}.gitMinor=${minor[2]}`);
  }
  return flags.join(' ');
}

export function isExecutableFile(path) {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** Reads the required version of `modPath` from a go.mod file. */
export function requiredVersion(goModFile, modPath, fail) {
  const text = readFileSync(goModFile, 'utf8');
  const esc = modPath.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  const m = new RegExp(`^\\s*(?:require\\s+)?${esc}\\s+(v\\S+)`, 'm').exec(text);
  if (!m) fail(`cannot find the required version of ${modPath} in ${goModFile}`);
  return m[1];
}

export function fmtDuration(ms) {
  const s = Math.round(ms / 1000);
  return s >= 60 ? `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s` : `${s}s`;
}

function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

function processAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code === 'EPERM';
  }
}

/**
 * Fills `<root>/<key>/` by `build` unless `ready()` already holds, and returns once it holds.
 *
 * - Needs Go; without it fails with "cannot build <what>: 'go' was not found on PATH … or <instead>".
 * - One builder at a time per key (parallel test files may all call the ensure script): a lock folder
 *   `.lock-<key>` holding the builder's pid; the others wait and use its result; a dead builder's lock
 *   is removed.
 * - `build({ tmpDir, go, goVersion, jobs, startedAt })` writes into `.tmp-<key>-<pid>/`, which is renamed
 *   into place only when `build` resolves, so an interrupted build never leaves a half-filled cache.
 *   `go(label, cwd, args, { quiet, testBinary })` runs `go build` (or `go test -c`) with `-p` from the `jobsEnv`
 *   variable (default 2).
 * - `doneMessage(took)` is logged once the folder is in place.
 */
export async function ensureGoBuild({ log, fail, root, key, label, ready, what, instead, jobsEnv, build, doneMessage }) {
  if (ready()) return;

  const goVersion = spawnSync('go', ['env', 'GOVERSION'], { encoding: 'utf8' });
  if (goVersion.error || goVersion.status !== 0) {
    fail(
      `cannot build ${what}: 'go' was not found on PATH` +
        (goVersion.error ? ` (${goVersion.error.code ?? goVersion.error.message})` : '') +
        `.\n  Install Go >= ${MIN_GO.join('.')} and retry, or ${instead}.`,
    );
  }
  const goName = goVersion.stdout.trim();
  const gv = /^go(\d+)\.(\d+)/.exec(goName);
  if (gv && (Number(gv[1]) < MIN_GO[0] || (Number(gv[1]) === MIN_GO[0] && Number(gv[2]) < MIN_GO[1]))) {
    log(`warning: ${goName} is older than go${MIN_GO.join('.')}; the build relies on GOTOOLCHAIN to fetch a newer toolchain`);
  }

  mkdirSync(root, { recursive: true });

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
    if (ready()) return;
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
      log(`another process (pid ${owner}) is building ${label}; waiting…`);
    }
    await sleep(2000);
  }

  // Re-check under the lock (another process may have finished just now).
  if (ready()) {
    rmSync(lockDir, { recursive: true, force: true });
    return;
  }

  // Leftovers of builds that were killed hard (we hold the lock, so nobody else uses them).
  for (const name of readdirSync(root)) {
    if (name.startsWith(`.tmp-${key}-`) || name.startsWith(`.old-${key}-`)) rmSync(join(root, name), { recursive: true, force: true });
  }

  const finalDir = join(root, key);
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

  const jobs = process.env[jobsEnv] || '2';
  const buildEnv = {
    ...process.env,
    CGO_ENABLED: '0',
    // Build exactly what go.mod/go.sum pin; never edit them, never use a workspace.
    GOFLAGS: '-mod=readonly',
    GOWORK: 'off',
  };

  /**
   * `quiet`: no "building …" / "built … in …" lines (the caller says what it builds).
   * `testBinary`: `go test -c` instead of `go build` (a package's test binary, e.g. the upstream e2e suite).
   */
  function go(what, cwd, args, { quiet = false, testBinary = false } = {}) {
    const started = Date.now();
    if (!quiet) log(`building ${what} (${testBinary ? 'go test -c' : 'go build'} -p ${jobs}); the first build takes many minutes…`);
    return new Promise((resolvePromise, reject) => {
      const child = spawn('go', [...(testBinary ? ['test', '-c'] : ['build']), '-p', jobs, '-trimpath', '-buildvcs=false', ...args], {
        cwd,
        env: buildEnv,
        stdio: ['ignore', 'pipe', 'inherit'], // stdout is reserved for the path the script prints
        detached: true, // own process group, so an interrupt can kill the compiler children too
      });
      child.stdout.pipe(process.stderr);
      currentChild = child;
      const timer = setInterval(() => log(`  … still building ${what} (${fmtDuration(Date.now() - started)})`), 30_000);
      child.on('error', (e) => {
        clearInterval(timer);
        reject(e);
      });
      child.on('exit', (code, signal) => {
        clearInterval(timer);
        currentChild = null;
        if (code === 0) {
          if (!quiet) log(`built ${what} in ${fmtDuration(Date.now() - started)}`);
          resolvePromise(Date.now() - started);
        } else {
          reject(new Error(`go build of ${what} failed (${signal ?? `exit code ${code}`})`));
        }
      });
    });
  }

  try {
    const startedAt = Date.now();
    await build({ tmpDir, go, goVersion: goName, jobs, startedAt });

    // Atomic publish: rename the complete folder into place.
    if (existsSync(finalDir)) {
      const old = join(root, `.old-${key}-${process.pid}`);
      renameSync(finalDir, old);
      renameSync(tmpDir, finalDir);
      rmSync(old, { recursive: true, force: true });
    } else {
      renameSync(tmpDir, finalDir);
    }
    log(doneMessage(fmtDuration(Date.now() - startedAt)));
  } catch (e) {
    cleanup();
    fail(e instanceof Error ? e.message : String(e));
  }
  cleanup();
}
