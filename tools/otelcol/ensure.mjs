#!/usr/bin/env node
// Makes sure the test OpenTelemetry Collector (`sits-otelcol`: the OTLP receiver and the file exporter, built
// from the Go module next to this script, see main.go) exists and prints its path on the last line of stdout.
// Progress goes to stderr. The same pattern as tools/helm/ensure.mjs, sharing tools/lib/cached-build.mjs
// (docs/adr/0067-tracing.md).
//
//   node tools/otelcol/ensure.mjs
//
// - If SITS_OTELCOL is set, it must be an executable (no build).
// - Otherwise the binary is cached in ${XDG_CACHE_HOME:-~/.cache}/sits-otelcol/<version>-<hash>/sits-otelcol,
//   where the hash covers main.go, go.mod and go.sum (another component set is another binary), and built
//   when missing (a minute or two on a quiet machine, much longer on a busy one).
//
// Environment: SITS_OTELCOL, XDG_CACHE_HOME, SITS_OTELCOL_BUILD_JOBS (go build -p, default 2).
// Plain Node ESM, no dependencies.

import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureGoBuild, isExecutableFile, reporter, requiredVersion, useOverride } from '../lib/cached-build.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const BINARY = 'sits-otelcol';
const { log, fail } = reporter('sits-otelcol');

useOverride('SITS_OTELCOL', (explicit) => {
  const path = resolve(explicit);
  if (!isExecutableFile(path))
    fail(`SITS_OTELCOL=${explicit}: not an executable file (it must be an OpenTelemetry Collector with the otlp receiver and the file exporter)`);
  return path;
});

const goMod = join(HERE, 'go.mod');
const version = requiredVersion(goMod, 'go.opentelemetry.io/collector/otelcol', fail); // v0.161.0
const hash = createHash('sha256');
for (const f of ['main.go', 'go.mod', 'go.sum']) hash.update(readFileSync(join(HERE, f)));
const key = `${version}-${hash.digest('hex').slice(0, 12)}`;
const cacheHome = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
const root = join(cacheHome, 'sits-otelcol');
const finalBin = join(root, key, BINARY);

await ensureGoBuild({
  log,
  fail,
  root,
  key,
  label: `${BINARY} ${key}`,
  ready: () => isExecutableFile(finalBin),
  what: BINARY,
  instead: `set SITS_OTELCOL to an OpenTelemetry Collector binary with the otlp receiver and the file exporter`,
  jobsEnv: 'SITS_OTELCOL_BUILD_JOBS',
  doneMessage: (took) => `built ${BINARY} ${version} in ${took}: ${finalBin}`,
  async build({ tmpDir, go, goVersion, startedAt }) {
    log(`${BINARY} ${key} not found; building with ${goVersion}`);
    await go(`${BINARY} ${version}`, HERE, ['-o', join(tmpDir, BINARY), '-ldflags', '-s -w', '.']);
    const r = spawnSync(join(tmpDir, BINARY), ['--version'], { encoding: 'utf8' });
    const out = `${r.stdout ?? ''}${r.stderr ?? ''}`;
    if (r.status !== 0 || !out.includes(version.replace(/^v/, '')))
      throw new Error(`${BINARY} --version did not report ${version}: ${out.trim() || r.error?.message}`);
    writeFileSync(
      join(tmpDir, 'BUILD-INFO.json'),
      `${JSON.stringify({ otelcol: version, go: goVersion, builtAt: new Date().toISOString(), buildSeconds: Math.round((Date.now() - startedAt) / 1000) }, null, 2)}\n`,
    );
  },
});
process.stdout.write(`${finalBin}\n`);
