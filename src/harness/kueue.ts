/**
 * Kueue (sigs.k8s.io/kueue, the manager built by tools/kueue/ensure.mjs) beside a test control plane: the peer of
 * issue 32's live bench. Its CRDs come from the same module version; the manager runs as a child of the plane
 * (plane.startProcess) with a Configuration that enables fair sharing and the batch/job integration.
 *
 * Webhooks outside a cluster: the apiserver cannot reach a webhook Service here (no kube-proxy, and Endpoints may
 * not hold loopback addresses), and Kueue's internal cert management signs its serving cert for
 * `<webhookServiceName>.<namespace>.svc` only, so a webhook URL of https://127.0.0.1:<port> would fail the
 * apiserver's host check. So no Mutating/ValidatingWebhookConfiguration is installed: callers create Jobs already
 * `suspend: true` with the `kueue.x-k8s.io/queue-name` label, as Kueue's Job webhook would make them. Internal
 * cert management stays on anyway: with it off, Kueue v0.17 reads its metrics certificate from the fixed path
 * /etc/kueue/metrics/certs and exits when it is missing, and its webhook server needs a certificate to start.
 * The rotator keeps its certificate in a Secret and waits for the kubelet to mount it into the webhook's certDir;
 * startKueue does that mount (it writes the Secret's files into the folder).
 * The cert rotator then also insists on injecting its CA into the conversion webhook of five CRDs, and keeps the
 * manager from starting while any of them lacks `spec.conversion.webhook.clientConfig`; so those CRDs get one, as
 * Kueue's kustomize overlay gives them, with a URL on the manager's webhook port. A call to it would fail the host
 * check above, so the CRDs serve only their storage version (v1beta2, which the manager uses; v1beta1 is only in
 * its scheme for that conversion webhook): with one version there is nothing to convert and it is never called.
 * (Serving v1beta1 too made the apiserver's watch cache try, and log a failed conversion, for every event.)
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { request as httpRequest } from 'node:http';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';

import { isStatus, KubeClient } from '../kube/client/client.ts';
import { freePorts, runEnsure } from './control-plane.ts';
import type { ComponentProcess, ControlPlane } from './control-plane.ts';
import { waitFor } from './e2e-kit.ts';
import { applyCrdObjects } from './upstream-crds.ts';

const ENSURE_SCRIPT = join(resolve(dirname(fileURLToPath(import.meta.url)), '../..'), 'tools/kueue/ensure.mjs');

export const KUEUE_API = '/apis/kueue.x-k8s.io/v1beta2';
/** The label that puts a Job into a LocalQueue (what Kueue's webhook expects users to set). */
export const QUEUE_NAME_LABEL = 'kueue.x-k8s.io/queue-name';
/** The Namespace, Secret and Service names of Kueue's default install (its cert rotator needs the first two). */
export const KUEUE_NAMESPACE = 'kueue-system';
const WEBHOOK_SECRET = 'kueue-webhook-server-cert';
const WEBHOOK_SERVICE = 'kueue-webhook-service';
/** The CRDs whose conversion webhook Kueue's cert rotator injects its CA into (pkg/util/cert in v0.17). */
const CONVERSION_CRDS = new Set([
  'localqueues.kueue.x-k8s.io',
  'clusterqueues.kueue.x-k8s.io',
  'workloads.kueue.x-k8s.io',
  'cohorts.kueue.x-k8s.io',
  'multikueueclusters.kueue.x-k8s.io',
]);

export type FairSharingStrategy = 'LessThanOrEqualToFinalShare' | 'LessThanInitialShare';

let ensured: Promise<string> | undefined;

/** Runs tools/kueue/ensure.mjs once per process (SITS_KUEUE_BIN, or the cache it builds on first use). */
export function ensureKueue(opts: { log?: (line: string) => void } = {}): Promise<string> {
  ensured ??= runEnsure(ENSURE_SCRIPT, opts.log ?? ((l) => process.stderr.write(`${l}\n`))).catch((e: unknown) => {
    ensured = undefined;
    throw e;
  });
  return ensured;
}

export interface KueueOptions {
  /** Folder holding `kueue` and `crds/`. Default: tools/kueue/ensure.mjs. */
  readonly binDir?: string;
  /** Client for the CRDs, the namespace and the secret. Default: the plane's admin. */
  readonly client?: KubeClient;
  /** Fair sharing's preemption strategies, in order; `false` runs Kueue without fair sharing (classic preemption). */
  readonly fairSharing?: false | { readonly preemptionStrategies: readonly FairSharingStrategy[] };
  /** Kueue integrations (its `integrations.frameworks`). Default ['batch/job']. */
  readonly frameworks?: readonly string[];
  /** zap log level of the manager (its --zap-log-level): 'info', 'debug', or a number (higher is chattier). */
  readonly logLevel?: string;
  readonly log?: (line: string) => void;
  /** How long the manager may take to answer /readyz. Default 60 s (scaled by load, e2e-kit.waitFor). */
  readonly readyTimeoutMs?: number;
}

export interface RunningKueue {
  readonly process: ComponentProcess;
  readonly binDir: string;
  readonly configPath: string;
  /** http://127.0.0.1:<port> serving /healthz and /readyz. */
  readonly healthUrl: string;
  readonly webhookPort: number;
  stop(): Promise<void>;
}

/** Kueue's CRDs from `<binDir>/crds`: the storage version only, and the conversion stanza its cert rotator needs (see the file comment). */
export function kueueCrds(binDir: string, webhookPort: number): Record<string, unknown>[] {
  const dir = join(binDir, 'crds');
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .sort();
  if (files.length === 0) throw new Error(`no Kueue CRDs (*.yaml) in ${dir}`);
  return files.map((f) => {
    const crd = parseYaml(readFileSync(join(dir, f), 'utf8')) as {
      metadata: { name: string };
      spec: { versions?: { storage?: boolean }[] } & Record<string, unknown>;
    };
    // Only the storage version is served, so the apiserver never has anything to convert.
    const versions = crd.spec.versions?.filter((v) => v.storage === true);
    const spec = versions === undefined || versions.length === 0 ? crd.spec : { ...crd.spec, versions };
    if (!CONVERSION_CRDS.has(crd.metadata.name)) return { ...crd, spec };
    return {
      ...crd,
      spec: {
        ...spec,
        conversion: { strategy: 'Webhook', webhook: { conversionReviewVersions: ['v1'], clientConfig: { url: `https://127.0.0.1:${webhookPort}/convert` } } },
      },
    };
  });
}

/** Kueue's v1beta2 Configuration for one manager beside a test plane (ports of its own, no leader election). */
export function kueueConfigYaml(o: {
  webhookPort: number;
  healthPort: number;
  certDir: string;
  fairSharing: KueueOptions['fairSharing'];
  frameworks: readonly string[];
}): string {
  return stringifyYaml({
    apiVersion: 'config.kueue.x-k8s.io/v1beta2',
    kind: 'Configuration',
    namespace: KUEUE_NAMESPACE,
    // Only Jobs that name a queue; others are none of Kueue's business (its default too).
    manageJobsWithoutQueueName: false,
    health: { healthProbeBindAddress: `127.0.0.1:${o.healthPort}` },
    // "0" turns the metrics server off: the bench reads Kueue's objects, not its metrics.
    metrics: { bindAddress: '0' },
    webhook: { host: '127.0.0.1', port: o.webhookPort, certDir: o.certDir },
    leaderElection: { leaderElect: false },
    internalCertManagement: { enable: true, webhookServiceName: WEBHOOK_SERVICE, webhookSecretName: WEBHOOK_SECRET },
    // The visibility API server (on by default) would bind port 8082 and wants an APIService; nothing here reads it.
    featureGates: { VisibilityOnDemand: false },
    // Kueue's local apiserver is not rate-limited by anything but this client (defaults 20 QPS, burst 30).
    clientConnection: { qps: 200, burst: 400 },
    integrations: { frameworks: [...o.frameworks] },
    // v1beta2 has no `enable`: the section being there turns fair sharing on.
    ...(o.fairSharing === false
      ? {}
      : { fairSharing: { preemptionStrategies: [...(o.fairSharing?.preemptionStrategies ?? ['LessThanOrEqualToFinalShare', 'LessThanInitialShare'])] } }),
  });
}

function httpStatus(url: string): Promise<number> {
  return new Promise((res, rej) => {
    const req = httpRequest(url, { timeout: 2000 }, (r) => {
      r.resume();
      res(r.statusCode ?? 0);
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${url}: timed out`)));
    req.on('error', rej);
    req.end();
  });
}

async function createIfMissing(client: KubeClient, path: string, body: unknown): Promise<void> {
  await client.post(path, body).catch((e: unknown) => {
    if (!isStatus(e, 409)) throw e;
  });
}

/** Writes the webhook Secret's files into `certDir` once the cert rotator has filled it; false while it has not. */
async function mountSecret(client: KubeClient, certDir: string): Promise<boolean> {
  const secret = await client.get<{ data?: Record<string, string> }>(`/api/v1/namespaces/${KUEUE_NAMESPACE}/secrets/${WEBHOOK_SECRET}`);
  const data = secret.data ?? {};
  if (data['tls.crt'] === undefined || data['tls.key'] === undefined) return false;
  for (const [name, b64] of Object.entries(data)) writeFileSync(join(certDir, name), Buffer.from(b64, 'base64'), { mode: 0o600 });
  return true;
}

/** Installs Kueue's CRDs and starts its manager against `plane`; resolves once its /readyz answers 200. */
export async function startKueue(plane: ControlPlane, opts: KueueOptions = {}): Promise<RunningKueue> {
  const client = opts.client ?? new KubeClient(plane.kubeConfig());
  const binDir = opts.binDir ?? (await ensureKueue(opts.log ? { log: opts.log } : {}));
  const [webhookPort, healthPort] = await freePorts(2);
  if (webhookPort === undefined || healthPort === undefined) throw new Error('no free ports for Kueue');
  await applyCrdObjects(client, kueueCrds(binDir, webhookPort));
  await createIfMissing(client, '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: KUEUE_NAMESPACE } });
  // The cert rotator fills this Secret but does not create it (upstream's manifests ship it empty).
  await createIfMissing(client, `/api/v1/namespaces/${KUEUE_NAMESPACE}/secrets`, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: WEBHOOK_SECRET, namespace: KUEUE_NAMESPACE },
  });
  const dir = join(plane.dir, 'kueue');
  const certDir = join(dir, 'certs');
  mkdirSync(certDir, { recursive: true });
  const configPath = join(dir, 'config.yaml');
  writeFileSync(configPath, kueueConfigYaml({ webhookPort, healthPort, certDir, fairSharing: opts.fairSharing, frameworks: opts.frameworks ?? ['batch/job'] }));
  const proc = plane.startProcess('kueue', join(binDir, 'kueue'), [
    `--config=${configPath}`,
    `--kubeconfig=${plane.kubeconfigPath}`,
    `--zap-log-level=${opts.logLevel ?? 'info'}`,
  ]);
  const healthUrl = `http://127.0.0.1:${healthPort}`;
  let mounted = false;
  try {
    await waitFor(
      'Kueue /readyz',
      async () => {
        if (!proc.alive()) throw new Error(`kueue exited (${proc.logPath}):\n${proc.tail().join('\n')}`);
        // The cert rotator only fills the Secret and waits for the kubelet to mount it into certDir; here we are the kubelet.
        if (!mounted) mounted = await mountSecret(client, certDir);
        return mounted && (await httpStatus(`${healthUrl}/readyz`)) === 200;
      },
      opts.readyTimeoutMs ?? 60_000,
      200,
    );
  } catch (e) {
    await proc.stop();
    throw new Error(`${(e as Error).message}\n--- kueue log tail ---\n${proc.tail().join('\n')}`);
  }
  return { process: proc, binDir, configPath, healthUrl, webhookPort, stop: () => proc.stop() };
}
