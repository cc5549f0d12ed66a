#!/usr/bin/env node
// Makes sure a Prometheus server binary exists for the metrics e2e test and prints its path on the last
// line of stdout. Progress goes to stderr.
//
//   node tools/prometheus/ensure.mjs
//
// - If SITS_PROMETHEUS is set, it must be an executable Prometheus (no download).
// - Otherwise /usr/bin/prometheus when it runs.
// - Otherwise Debian's `prometheus` package is fetched with `apt-get download` (no root, nothing installed,
//   no service started) and unpacked with `dpkg-deb -x` into
//   ${XDG_CACHE_HOME:-~/.cache}/sits-prometheus/<package version>/; the binary is a plain Go program that
//   needs only libc. The unpacking goes to a temporary folder renamed into place when complete.
// Why the Debian package and not the Go module: it takes seconds where building
// github.com/prometheus/prometheus takes many minutes on two cores (docs/adr/0065).
// Plain Node ESM, no dependencies (tools/lib/cached-build.mjs for the shared reporting and override).

import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { isExecutableFile, reporter, useOverride } from '../lib/cached-build.mjs';

const { log, fail } = reporter('sits-prometheus');

function runs(path) {
  if (!isExecutableFile(path)) return false;
  const r = spawnSync(path, ['--version'], { encoding: 'utf8', timeout: 30_000 });
  return r.status === 0 && /prometheus, version/.test(`${r.stdout}${r.stderr}`);
}

function run(cmd, args, cwd) {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  return { ok: r.status === 0, out: `${r.stdout ?? ''}${r.stderr ?? ''}`.trim() };
}

useOverride('SITS_PROMETHEUS', (explicit) => {
  if (!runs(explicit)) fail(`SITS_PROMETHEUS=${explicit} is not an executable Prometheus`);
  return explicit;
});

if (runs('/usr/bin/prometheus')) {
  log('using /usr/bin/prometheus');
  console.log('/usr/bin/prometheus');
  process.exit(0);
}

if (!run('apt-get', ['--version']).ok || !run('dpkg-deb', ['--version']).ok)
  fail("no Prometheus found: install Debian's prometheus package, or set SITS_PROMETHEUS to a prometheus binary");

const candidate = () => /Candidate:\s*(\S+)/.exec(run('apt-cache', ['policy', 'prometheus']).out)?.[1];
let version = candidate();
if (version === undefined || version === '(none)') {
  // Package lists never fetched on a fresh machine: refresh them once (root only).
  if (process.getuid?.() !== 0) fail('apt knows no prometheus package and only root can run apt-get update; set SITS_PROMETHEUS');
  log('apt-get update');
  if (!run('apt-get', ['update']).ok) fail('apt-get update failed');
  version = candidate();
  if (version === undefined || version === '(none)') fail('apt knows no prometheus package');
}

const root = join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'sits-prometheus');
const dir = join(root, version.replace(/[^A-Za-z0-9.+~-]/g, '_'));
const bin = join(dir, 'usr/bin/prometheus');
if (!runs(bin)) {
  mkdirSync(root, { recursive: true });
  const tmp = mkdtempSync(join(root, '.tmp-'));
  try {
    log(`apt-get download prometheus=${version}`);
    const dl = run('apt-get', ['download', `prometheus=${version}`], tmp);
    const deb = readdirSync(tmp).find((f) => f.endsWith('.deb'));
    if (!dl.ok || deb === undefined) fail(`apt-get download prometheus=${version} failed:\n${dl.out}`);
    const x = run('dpkg-deb', ['-x', deb, 'root'], tmp);
    if (!x.ok) fail(`dpkg-deb -x ${deb} failed:\n${x.out}`);
    if (!runs(join(tmp, 'root/usr/bin/prometheus'))) fail(`the package ${deb} holds no runnable usr/bin/prometheus`);
    // Another process may have filled it meanwhile: keep theirs.
    if (!existsSync(dir)) renameSync(join(tmp, 'root'), dir);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  if (!runs(bin)) fail(`${bin} does not run`);
}
log(`using ${bin}`);
console.log(bin);
