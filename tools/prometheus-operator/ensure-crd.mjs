#!/usr/bin/env node
// Makes sure the ServiceMonitor CRD of the Prometheus Operator is on disk and prints its path on the last line
// of stdout (progress on stderr). The chart's optional ServiceMonitor (serviceMonitor.enabled) is applied
// against this real CRD in src/cli/deploy.e2e.test.ts, so the repository holds no hand copy of it.
//
//   node tools/prometheus-operator/ensure-crd.mjs
//
// - SITS_SERVICEMONITOR_CRD set → it must be a readable file holding that CRD; printed, nothing fetched.
// - Else `go mod download -json github.com/prometheus-operator/prometheus-operator@<VERSION>` (the Go module
//   proxy, checked against sum.golang.org as any module download) puts the module into the Go module cache,
//   read-only and shared with every other Go build here; the file is
//   <module dir>/example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml. Nothing is built.
// Plain Node ESM, no dependencies (tools/lib/cached-build.mjs for the reporting and the override).

import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { reporter, useOverride } from '../lib/cached-build.mjs';

const MODULE = 'github.com/prometheus-operator/prometheus-operator';
// The operator release whose CRD the chart's ServiceMonitor is checked against.
const VERSION = 'v0.85.0';
const FILE = 'example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml';
const { log, fail } = reporter('sits-prometheus-operator');

const isServiceMonitorCrd = (path) => existsSync(path) && /\bname: servicemonitors\.monitoring\.coreos\.com\b/.test(readFileSync(path, 'utf8'));

useOverride('SITS_SERVICEMONITOR_CRD', (path) => {
  if (!isServiceMonitorCrd(path)) fail(`SITS_SERVICEMONITOR_CRD=${path} is not the servicemonitors.monitoring.coreos.com CRD`);
  return path;
});

log(`${MODULE}@${VERSION} from the Go module cache (downloaded when missing)`);
// GOFLAGS=-mod=mod: no go.mod here; GOWORK=off: no workspace of the caller's folder is read.
const r = spawnSync('go', ['mod', 'download', '-json', `${MODULE}@${VERSION}`], {
  encoding: 'utf8',
  env: { ...process.env, GOWORK: 'off', GOFLAGS: '-mod=mod' },
  timeout: 600_000,
});
if (r.error !== undefined) fail(`go mod download: ${r.error.message} (is Go installed? or set SITS_SERVICEMONITOR_CRD to the CRD file)`);
let info;
try {
  info = JSON.parse(r.stdout);
} catch {
  fail(`go mod download printed no module information (exit code ${r.status}): ${r.stderr.trim() || r.stdout.trim()}`);
}
if (r.status !== 0 || info.Error !== undefined || typeof info.Dir !== 'string') fail(`go mod download ${MODULE}@${VERSION}: ${info.Error ?? r.stderr.trim()}`);
const crd = join(info.Dir, FILE);
if (!isServiceMonitorCrd(crd)) fail(`${crd} is missing or not the ServiceMonitor CRD`);
process.stdout.write(`${crd}\n`);
