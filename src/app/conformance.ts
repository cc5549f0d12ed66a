/**
 * `sits conformance`: the upstream Kubernetes e2e scheduling cases (k8s.io/kubernetes/test/e2e, built from Go
 * modules like the control plane) against the dev cluster with SITS as its only scheduler, `default-scheduler`.
 * Starts the dev cluster (fake GPU nodes, fake kubelet) without its own scheduler, the node-status half of a
 * kubelet, per-node system pods, kube-controller-manager (what the suite's framework needs: service accounts,
 * namespace deletion, garbage collection, ReplicaSets, PV binding), then SITS's live scheduler, runs the focus
 * with the skip list, and returns one line per case. See docs/conformance.md, ADR 0073.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDevCluster } from './dev-cluster.ts';
import { createLiveApp } from './live.ts';
import { ensureK8sBinaries } from '../harness/control-plane.ts';
import { FakeNodeStatus } from '../harness/fake-node-status.ts';
import { anyOf, ensureE2eSuite, readReportFile, runE2eSuite, type CaseResult } from '../harness/upstream-e2e.ts';
import type { SkippedCase } from './conformance-cases.ts';

/** kube-controller-manager's controllers the suite's framework and cases rely on (none needs a kubelet). */
export const CONFORMANCE_CONTROLLERS: readonly string[] = [
  'serviceaccount-controller',
  'serviceaccount-token-controller',
  'root-ca-certificate-publisher-controller',
  'namespace-controller',
  'garbage-collector-controller',
  'replicaset-controller',
  'replicationcontroller-controller',
  'persistentvolume-binder-controller',
  'disruption-controller',
];

/** Per-node pods the suite waits for in kube-system before a preemption case (e2enode.WaitForTotalHealthy). */
const SYSTEM_POD_PREFIXES = ['kube-proxy', 'node-problem-detector', 'fluentd-elasticsearch'];

export interface ConformanceOptions {
  /** Ginkgo focus (regular expression). */
  readonly focus: string;
  /** Cases left out, each with its reason (ginkgo --skip). */
  readonly skipped: readonly SkippedCase[];
  readonly nodes: number;
  readonly shape: string;
  /** Ginkgo's timeout for the whole run. */
  readonly timeoutMs: number;
  /** Keep the suite's log and report here (default: a temp folder, removed). */
  readonly workDir?: string;
  readonly log?: (m: string) => void;
}

export interface ConformanceSummary {
  readonly kubernetes: string;
  readonly scheduler: string;
  readonly focus: string;
  readonly nodes: { readonly count: number; readonly shape: string };
  readonly counts: { readonly passed: number; readonly failed: number; readonly skipped: number };
  readonly seconds: number;
  readonly exitCode: number;
  readonly cases: readonly (CaseResult & { readonly skipReason?: string })[];
}

/** The reason of the first skip entry whose text is part of `name`. */
export function skipReasonOf(name: string, skipped: readonly SkippedCase[]): string | undefined {
  return skipped.find((s) => name.includes(s.text))?.reason;
}

export async function runConformance(o: ConformanceOptions): Promise<ConformanceSummary> {
  const log = o.log ?? (() => undefined);
  const t0 = Date.now();
  // Everything built (or found in the cache) first, so no build runs while the clock of a case does.
  const binDir = await ensureK8sBinaries({ log });
  const e2eDir = await ensureE2eSuite(log);
  const work = o.workDir ?? mkdtempSync(join(tmpdir(), 'sits-conformance-'));
  mkdirSync(work, { recursive: true });
  const cluster = await startDevCluster({ nodes: o.nodes, shape: o.shape, binDir, withScheduler: false, controllers: false, log });
  const nodeStatus = new FakeNodeStatus(cluster.client, cluster.nodeNames, { ephemeralStorage: '100Gi', log });
  let app: Awaited<ReturnType<typeof createLiveApp>> | undefined;
  try {
    await nodeStatus.start();
    await createSystemPods(cluster.client, cluster.nodeNames);
    const pki = join(cluster.plane.dir, 'pki');
    await cluster.plane.startControllerManager({
      controllers: CONFORMANCE_CONTROLLERS,
      args: [`--service-account-private-key-file=${join(pki, 'sa.key')}`, `--root-ca-file=${join(pki, 'apiserver.crt')}`],
    });
    app = await createLiveApp({ kubeconfig: cluster.plane.kubeconfigPath, schedulerName: 'default-scheduler', identity: 'sits-conformance', log });
    const reportPath = join(work, 'ginkgo-report.json');
    const logPath = join(work, 'e2e.log');
    log(`running the upstream e2e suite (focus ${o.focus}); its output: ${logPath}`);
    const exitCode = await runE2eSuite({
      binDir: e2eDir,
      kubeconfig: cluster.plane.kubeconfigPath,
      focus: o.focus,
      skip: anyOf(o.skipped.map((s) => s.text)),
      reportPath,
      logPath,
      timeoutMs: o.timeoutMs,
      log,
    });
    const cases = readReportFile(reportPath, new RegExp(o.focus)).map((c) => {
      const reason = c.state === 'skipped' ? skipReasonOf(c.name, o.skipped) : undefined;
      return reason === undefined ? c : { ...c, skipReason: reason };
    });
    const count = (s: CaseResult['state']): number => cases.filter((c) => c.state === s).length;
    return {
      kubernetes: binDir.split('/').at(-1)?.split('-')[0] ?? '',
      scheduler: 'sits (default-scheduler)',
      focus: o.focus,
      nodes: { count: o.nodes, shape: o.shape },
      counts: { passed: count('passed'), failed: count('failed'), skipped: count('skipped') },
      seconds: Math.round((Date.now() - t0) / 1000),
      exitCode,
      cases,
    };
  } finally {
    nodeStatus.stop();
    await app?.stop();
    await cluster.stop();
    if (o.workDir === undefined) rmSync(work, { recursive: true, force: true });
  }
}

/** Running pods named like the add-ons of a real node, bound directly (the fake kubelet runs them). */
async function createSystemPods(client: Awaited<ReturnType<typeof startDevCluster>>['client'], nodes: readonly string[]): Promise<void> {
  for (const node of nodes) {
    for (const prefix of SYSTEM_POD_PREFIXES) {
      await client.post('/api/v1/namespaces/kube-system/pods', {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: `${prefix}-${node}`, namespace: 'kube-system', labels: { 'sits.dev/conformance': 'system-pod' } },
        spec: { nodeName: node, containers: [{ name: prefix, image: 'registry.k8s.io/pause:3.10' }] },
      });
    }
  }
}
