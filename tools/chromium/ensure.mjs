#!/usr/bin/env node
// Makes sure a headless-capable Chromium exists for the browser tests and prints its path on the last
// line of stdout. Progress goes to stderr.
//
//   node tools/chromium/ensure.mjs
//
// - If SITS_CHROMIUM is set, it must be an executable (no install).
// - Otherwise the first of /usr/bin/chromium, /usr/bin/chromium-browser, /usr/bin/google-chrome that runs.
// - Otherwise, as root on Debian/Ubuntu, Debian's `chromium` package is installed with apt-get (the
//   only browser source on a machine without internet; `npx playwright install` cannot download).
// Plain Node ESM, no dependencies (tools/lib/cached-build.mjs for the shared reporting and override).

import { spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { reporter, useOverride } from '../lib/cached-build.mjs';

const CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'];

const { log, fail } = reporter('sits-chromium');

function runs(path) {
  try {
    accessSync(path, constants.X_OK);
  } catch {
    return false;
  }
  const r = spawnSync(path, ['--version'], { encoding: 'utf8', timeout: 30_000 });
  return r.status === 0;
}

function found() {
  return CANDIDATES.find(runs);
}

function apt(args) {
  log(`apt-get ${args.join(' ')}`);
  const r = spawnSync('apt-get', args, { stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  return r.status === 0;
}

useOverride('SITS_CHROMIUM', (explicit) => {
  if (!runs(explicit)) fail(`SITS_CHROMIUM=${explicit} is not an executable browser`);
  return explicit;
});

let path = found();
if (path === undefined) {
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  const hasApt = spawnSync('apt-get', ['--version'], { stdio: 'ignore' }).status === 0;
  if (!isRoot || !hasApt) fail(`no Chromium found (${CANDIDATES.join(', ')}); install Debian's chromium package or set SITS_CHROMIUM`);
  // The package lists may be stale on a fresh machine: update once only when the plain install fails.
  const install = ['install', '-y', '--no-install-recommends', 'chromium'];
  if (!apt(install) && !(apt(['update']) && apt(install))) fail('apt-get could not install chromium');
  path = found();
  if (path === undefined) fail('chromium was installed but does not run');
}
log(`using ${path}`);
console.log(path);
