/**
 * `sits bench chaos`: the SITS scheduler under real control-plane faults. A real etcd + kube-apiserver (audit log
 * on) + kube-controller-manager (garbage collection), fake GPU nodes with the fake kubelet, two scheduler replicas
 * (`sits run --controllers` with leader election, each its own API user, through a latency proxy), a seeded stream
 * of TrainingJobs, InferenceServices and pods, and the seeded fault plan (plan.ts) run fault after fault. Then a
 * quiet period, and the invariants (invariants.ts) over what the apiserver saw: the bench's pod watch and the audit
 * log. See bench/chaos.md.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { V1Pod } from '@kubernetes/client-node';
import { LABEL, SCHEDULER_NAME } from '../../api/wire.ts';
import { applyCrds, devNodes, isFinitePod } from '../../app/dev-cluster.ts';
import { kubeconfigYaml, startControlPlane, type ControlPlane } from '../../harness/control-plane.ts';
import { FakeKubelet } from '../../harness/fake-kubelet.ts';
import { createFakeGpuNodes } from '../../harness/fake-nodes.ts';
import { makeScratchDir, sweepStaleScratch } from '../../harness/scratch-dirs.ts';
import { KubeApiError, KubeClient, isStatus } from '../../kube/client/client.ts';
import { Reflector } from '../../kube/client/reflector.ts';
import { AUDIT_POLICY, parseAudit, rejectedFor } from './audit.ts';
import { checkInvariants, type Invariants, type PodObs } from './invariants.ts';
import { makePlan, type Fault, type FaultCounts } from './plan.ts';
import { PodRecord } from './record-order.ts';
import type { ReplicaConfig } from './replica.ts';
import { startSlowProxy, type SlowProxy } from '../../harness/slow-proxy.ts';
import { CHAOS_NS, GROUP_VERSION, gpuIndicesOf, killGang, objectOf, probePod, slotOfPod, slotsOf, submissionsFor, type Submission } from './workload.ts';

export interface ChaosProgress {
  line(m: string): void;
  status(m: string): void;
}

export interface ChaosOptions {
  readonly seed: number;
  readonly nodes: number;
  readonly counts: FaultCounts;
  readonly gapSec: readonly [number, number];
  readonly windowSec: readonly [number, number];
  readonly leaseDurationSec: number;
  /** Seconds a TrainingJob replica runs before it succeeds. */
  readonly trainingRunSec: number;
  /** Quiet time after the last fault, before the wait for every pod to be bound. */
  readonly quietSec: number;
  /** How long a gang may stay partly bound before it counts as half-bound. */
  readonly gangWindowSec: number;
  /** Give up waiting for the last pods after this long (they then count as lost). */
  readonly settleTimeoutSec: number;
  readonly progress?: ChaosProgress;
  /** Every log line of the control plane and the replicas. */
  readonly log?: (m: string) => void;
}

export interface ChaosResult {
  readonly seed: number;
  readonly nodes: number;
  readonly gpusPerNode: number;
  readonly leaseDurationSec: number;
  readonly gangWindowSec: number;
  readonly plan: readonly Fault[];
  readonly faults: {
    readonly apiserverRestarts: number;
    readonly etcdRestarts: number;
    readonly schedulerKills: number;
    readonly leaderFailovers: number;
    readonly watchExpired: number;
    readonly throttled: number;
    readonly slowApiSeconds: number;
  };
  readonly invariants: Invariants;
  readonly pods: { readonly submitted: number; readonly bound: number };
  readonly recoverySec: { readonly p50: number; readonly max: number };
  /** What the faults did, as measured (varies run to run). */
  readonly observed: {
    /** Scheduler kills that landed inside a gang's binding (the failpoint), the rest by timing. */
    readonly killsMidGang: number;
    /** Leader pauses (SIGSTOP) that landed inside a gang's binding, the rest by timing. */
    readonly pausesMidGang: number;
    /** Pods deleted by a replica that did not hold the Lease (a stale gang rollback; listed in `violations`). */
    readonly nonLeaderPodDeletes: number;
    /** 410 Gone answers to the bench's own pod watch. */
    readonly watch410: number;
    /** Pods its relists showed recreated under their name (a gang rolled back in the gap): old object ended first. */
    readonly replacedInGap: number;
    /** Requests of the replicas APF rejected with 429 (apiserver_flowcontrol_rejected_requests_total). */
    readonly rejected429: number;
    /** Longest time a gang was partly bound (a crashed leader's plan completed by the next), seconds. */
    readonly maxPartialGangSec: number;
    readonly recoverySecEach: readonly number[];
    readonly wallSec: number;
  };
  readonly violations: readonly string[];
  /** The record of every pod a GPU or capacity violation names (`t`: seconds since the bench started): to read why. */
  readonly evidence: Readonly<Record<string, readonly PodObs[]>>;
}

const REPLICA_GROUP = 'sits:chaos-replicas';
const APF_NAME = 'sits-chaos-tight';
const LEASE_PATH = `/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/${SCHEDULER_NAME}`;
const GPUS_PER_NODE = 8;
/** The repository, from source (where a bare `tsx` resolves). */
const REPO_ROOT = fileURLToPath(new URL('../../..', import.meta.url));

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Retries `fn` through the faults (the apiserver may be down for seconds) until `timeoutMs`. */
async function retry<T>(what: string, fn: () => Promise<T>, timeoutMs = 120_000): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    try {
      return await fn();
    } catch (e) {
      if (performance.now() > deadline) throw new Error(`${what}: ${(e as Error).message}`);
      await sleep(250);
    }
  }
}

/** A scheduler replica process (replica.ts). */
class Replica {
  child: ChildProcess | undefined;
  exited: Promise<void> = Promise.resolve();
  private alive = false;
  unexpectedExits = 0;
  private expectExit = false;

  constructor(
    readonly identity: string,
    readonly user: string,
    private readonly kubeconfigPath: string,
    private readonly leaseDurationSec: number,
    private readonly logPath: string,
  ) {}

  get running(): boolean {
    return this.alive;
  }

  async start(): Promise<void> {
    const entry = fileURLToPath(new URL('./replica.ts', import.meta.url));
    // From source the replica is TypeScript and needs the loader (resolved from the repository when the test runner
    // hides import.meta.resolve); the build points `entry` at its compiled file.
    const tsx = typeof import.meta.resolve === 'function' ? import.meta.resolve('tsx') : 'tsx';
    const loader = entry.endsWith('.ts') ? ['--import', tsx] : [];
    const cfg: ReplicaConfig = { kubeconfig: this.kubeconfigPath, identity: this.identity, leaseDurationSec: this.leaseDurationSec };
    const child = spawn(process.execPath, [...loader, entry, JSON.stringify(cfg)], { stdio: ['pipe', 'pipe', 'pipe'], ...(entry.endsWith('.ts') ? { cwd: REPO_ROOT } : {}) });
    this.child = child;
    this.alive = true;
    this.expectExit = false;
    this.exited = new Promise((r) =>
      child.once('exit', (code, sig) => {
        this.alive = false;
        if (!this.expectExit) this.unexpectedExits++;
        appendFileSync(this.logPath, `---- exited with ${sig ?? `code ${code}`}\n`);
        r();
      }),
    );
    createInterface({ input: child.stderr }).on('line', (l) => appendFileSync(this.logPath, `${l}\n`));
    await new Promise<void>((res, rej) => {
      const t = setTimeout(() => rej(new Error(`${this.identity} not ready within 120 s (log ${this.logPath})`)), 120_000);
      createInterface({ input: child.stdout }).on('line', (l) => {
        if (l.includes('"ready"')) {
          clearTimeout(t);
          res();
        }
      });
      void this.exited.then(() => {
        clearTimeout(t);
        rej(new Error(`${this.identity} exited before it was ready (log ${this.logPath})`));
      });
    });
  }

  /** The failpoint: SIGKILL after `n` more gang-member bindings. */
  arm(n: number): void {
    this.expectExit = true;
    this.child?.stdin?.write(`arm ${n}\n`);
  }

  /** The failpoint: SIGSTOP after `n` more gang-member bindings. */
  pause(n: number): void {
    this.child?.stdin?.write(`pause ${n}\n`);
  }

  /** Whether the process is stopped (state T in /proc). */
  stopped(): boolean {
    const pid = this.child?.pid;
    if (pid === undefined || !this.alive) return false;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      return stat.slice(stat.lastIndexOf(')') + 2).startsWith('T');
    } catch {
      return false;
    }
  }

  signal(sig: NodeJS.Signals): void {
    if (sig === 'SIGKILL' || sig === 'SIGTERM') this.expectExit = true;
    if (this.alive) this.child?.kill(sig);
  }

  async stop(): Promise<void> {
    if (!this.alive) return;
    this.expectExit = true;
    this.child?.kill('SIGCONT');
    this.child?.stdin?.end();
    const t = setTimeout(() => this.child?.kill('SIGKILL'), 15_000);
    await this.exited;
    clearTimeout(t);
  }
}

function httpsGetText(url: string, token: string): Promise<string> {
  return new Promise((res, rej) => {
    const u = new URL(url);
    const req = (u.protocol === 'https:' ? httpsRequest : httpRequest)(
      u,
      { method: 'GET', timeout: 10_000, headers: { Authorization: `Bearer ${token}` }, rejectUnauthorized: false },
      (resp) => {
        let body = '';
        resp.setEncoding('utf8');
        resp.on('data', (d: string) => (body += d));
        resp.on('end', () => (resp.statusCode === 200 ? res(body) : rej(new Error(`GET ${url}: HTTP ${resp.statusCode}`))));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', rej);
    req.end();
  });
}

function postJson(url: string, body: unknown): Promise<Record<string, unknown>> {
  return new Promise((res, rej) => {
    const req = httpRequest(new URL(url), { method: 'POST', timeout: 10_000, headers: { 'Content-Type': 'application/json' } }, (resp) => {
      let text = '';
      resp.setEncoding('utf8');
      resp.on('data', (d: string) => (text += d));
      resp.on('end', () => (resp.statusCode === 200 ? res(JSON.parse(text) as Record<string, unknown>) : rej(new Error(`POST ${url}: HTTP ${resp.statusCode} ${text}`))));
    });
    req.on('error', rej);
    req.end(JSON.stringify(body));
  });
}

const pct = (xs: readonly number[], p: number): number => {
  if (xs.length === 0) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] as number;
};
const round2 = (x: number): number => Math.round(x * 100) / 100;

function gpusOf(p: V1Pod): number {
  let n = 0;
  for (const c of p.spec?.containers ?? []) {
    const q = c.resources?.limits?.['nvidia.com/gpu'] ?? c.resources?.requests?.['nvidia.com/gpu'];
    n += q === undefined ? 0 : Number(q);
  }
  return n;
}

function obsOf(t: number, type: PodObs['type'], p: V1Pod): PodObs {
  const ns = p.metadata?.namespace ?? '';
  const name = p.metadata?.name ?? '';
  const group = p.metadata?.labels?.[LABEL.podGroup];
  const owner = p.metadata?.ownerReferences?.find((o) => o.controller === true)?.uid;
  return {
    t,
    type,
    uid: p.metadata?.uid ?? '',
    ns,
    name,
    node: p.spec?.nodeName ?? '',
    gpus: gpusOf(p),
    gpuIndices: gpuIndicesOf(p.metadata?.annotations),
    terminal: p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed',
    ...(group === undefined ? {} : { gang: `${ns}/${group}` }),
    ...(owner === undefined ? {} : { ownerUid: owner }),
    slot: slotOfPod(ns, name, p.metadata?.labels),
    rv: p.metadata?.resourceVersion ?? '',
  };
}

type Counts = { -readonly [K in keyof ChaosResult['faults']]: number };

/** One run: the cluster, the record, the submissions, the injectors. */
class ChaosRun {
  readonly t0 = performance.now();
  readonly startWallMs = Date.now();
  readonly dir = makeScratchDir('sits-chaos-');
  readonly auditPath = join(this.dir, 'audit.log');
  readonly say: ChaosProgress;
  readonly log: (m: string) => void;
  plane: ControlPlane | undefined;
  proxy: SlowProxy | undefined;
  kubelet: FakeKubelet | undefined;
  recorder: Reflector<V1Pod> | undefined;
  client: KubeClient | undefined;
  nodes: ReturnType<typeof devNodes> = [];
  readonly replicas: Replica[] = [];
  // The record: every pod event of the namespace, in order, with the time it arrived.
  readonly rec = new PodRecord();
  watch410 = 0;
  // Submissions: the slots they fill, gang sizes, the owners' uids and how many children each should have.
  readonly sub = {
    slots: new Set<string>(),
    gangSize: new Map<string, number>(),
    expectedChildren: new Map<string, number>(),
    services: [] as { name: string; slots: string[]; step: number }[],
  };
  readonly counts: Counts = { apiserverRestarts: 0, etcdRestarts: 0, schedulerKills: 0, leaderFailovers: 0, watchExpired: 0, throttled: 0, slowApiSeconds: 0 };
  readonly measured = { killsMidGang: 0, pausesMidGang: 0, rejected429: 0, recovery: [] as number[] };

  constructor(readonly o: ChaosOptions) {
    this.say = o.progress ?? { line: () => undefined, status: () => undefined };
    this.log = o.log ?? (() => undefined);
  }

  get cp(): ControlPlane {
    if (this.plane === undefined) throw new Error('control plane not started');
    return this.plane;
  }

  get api(): KubeClient {
    if (this.client === undefined) throw new Error('client not started');
    return this.client;
  }

  async setup(): Promise<void> {
    const o = this.o;
    writeFileSync(join(this.dir, 'audit-policy.yaml'), AUDIT_POLICY);
    const users = ['sits-replica-0', 'sits-replica-1'].map((user) => ({ user, token: randomBytes(24).toString('hex') }));
    this.plane = await startControlPlane({
      log: this.log,
      apiServerArgs: [`--audit-policy-file=${join(this.dir, 'audit-policy.yaml')}`, `--audit-log-path=${this.auditPath}`, '--audit-log-maxsize=2000'],
      tokens: users.map((r) => ({ token: r.token, user: r.user, groups: [REPLICA_GROUP] })),
    });
    this.client = new KubeClient(this.cp.kubeConfig(), { userAgent: 'sits-bench-chaos/0.1' });
    const api = this.api;
    await applyCrds(api);
    // The replicas are not system:masters (APF exempts those): cluster-admin through a binding instead.
    await api.post('/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'sits-chaos-replicas' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: REPLICA_GROUP }],
    });
    await this.cp.startControllerManager({ controllers: ['garbage-collector-controller'] });
    this.nodes = devNodes(o.nodes, 'dgx-h100');
    await createFakeGpuNodes(this.cp.kubeConfig(), this.nodes);
    const nodeNames = new Set(this.nodes.map((n) => n.name));
    this.kubelet = new FakeKubelet(api, (n) => nodeNames.has(n), this.log, { defaultRunSeconds: (p) => (isFinitePod(p) ? o.trainingRunSec : undefined) });
    await this.kubelet.start();
    await api.post('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: CHAOS_NS } });
    this.recorder = new Reflector<V1Pod>(api, `/api/v1/namespaces/${CHAOS_NS}/pods`, {
      add: (p) => this.seen('ADDED', p),
      update: (p) => this.seen('MODIFIED', p),
      delete: (p) => this.seen('DELETED', p),
      error: (e) => {
        if (e instanceof KubeApiError && e.status === 410) this.watch410++;
      },
    });
    await this.recorder.start();
    this.proxy = await startSlowProxy(Number(new URL(this.cp.server).port));
    for (const [i, r] of users.entries()) {
      const kc = join(this.dir, `${r.user}.kubeconfig`);
      writeFileSync(kc, kubeconfigYaml(this.proxy.url, r.token), { mode: 0o600 });
      this.replicas.push(new Replica(`replica-${i}`, r.user, kc, o.leaseDurationSec, join(this.dir, `replica-${i}.log`)));
    }
    await Promise.all(this.replicas.map((r) => r.start()));
  }

  /** Events of one synchronous burst (a watch chunk, a whole relist): recorded together (PodRecord.burst). */
  private readonly burst: { type: PodObs['type']; ob: PodObs }[] = [];

  private seen(type: PodObs['type'], p: V1Pod): void {
    if (p.spec?.schedulerName !== SCHEDULER_NAME) return;
    if (this.burst.length === 0) queueMicrotask(() => this.rec.burst(this.burst.splice(0), Date.now()));
    this.burst.push({ type, ob: obsOf(0, type, p) });
  }

  elapsedSec(): number {
    return Math.round((performance.now() - this.t0) / 1000);
  }

  async submit(s: Submission, step: number): Promise<void> {
    const api = this.api;
    const { path, body } = objectOf(s);
    const created = await retry(`create ${s.kind} ${s.name}`, () =>
      api.post<{ metadata?: { uid?: string } }>(path, body).catch(async (e: unknown) => {
        // Created before a cut connection: the object is there.
        if (isStatus(e, 409)) return api.get<{ metadata?: { uid?: string } }>(`${path}/${s.name}`);
        throw e;
      }),
    );
    for (const slot of slotsOf(s)) this.sub.slots.add(slot);
    if (s.kind !== 'Pod' && created.metadata?.uid !== undefined) this.sub.expectedChildren.set(created.metadata.uid, s.replicas);
    if (s.kind === 'TrainingJob') this.sub.gangSize.set(`${CHAOS_NS}/${s.name}`, s.replicas);
    if (s.kind === 'InferenceService') this.sub.services.push({ name: s.name, slots: slotsOf(s), step });
  }

  /** Deletes the InferenceServices submitted up to `step` once all their replicas were bound (garbage collection takes their pods). */
  async deleteServices(upTo: number): Promise<void> {
    for (const s of this.sub.services.filter((x) => x.step <= upTo && x.slots.every((slot) => this.rec.boundAt.has(slot)))) {
      this.sub.services.splice(this.sub.services.indexOf(s), 1);
      await retry(`delete InferenceService ${s.name}`, () =>
        this.api
          .delete(`/apis/${GROUP_VERSION}/namespaces/${CHAOS_NS}/inferenceservices/${s.name}`)
          .catch((e: unknown) => (isStatus(e, 404) ? undefined : Promise.reject(e))),
      );
    }
  }

  holder(): Promise<string> {
    return retry('read the Lease', async () => (await this.api.get<{ spec?: { holderIdentity?: string } }>(LEASE_PATH)).spec?.holderIdentity ?? '');
  }

  /** The replica holding the Lease (waiting for one, e.g. after a kill). */
  async leader(): Promise<Replica> {
    const deadline = performance.now() + 120_000;
    for (;;) {
      const h = await this.holder();
      const r = this.replicas.find((x) => x.identity === h && x.running);
      if (r !== undefined) return r;
      if (performance.now() > deadline) throw new Error(`no live replica holds the Lease (holder "${h}")`);
      await sleep(250);
    }
  }

  /** Runs one fault; false for the ones that do not stop scheduling (throttling, latency): no recovery time. */
  async inject(f: Fault): Promise<boolean> {
    const cp = this.cp;
    switch (f.kind) {
      case 'apiserverRestart':
        await cp.killApiServer();
        this.counts.apiserverRestarts++;
        return true;
      case 'etcdRestart':
        await cp.killEtcd();
        this.counts.etcdRestarts++;
        return true;
      case 'watchExpired': {
        // Compact etcd up to now, then restart kube-apiserver: every watch resuming from an older version is told 410 Gone.
        const status = await postJson(`${cp.etcdUrl}/v3/maintenance/status`, {});
        const rev = (status['header'] as { revision?: string } | undefined)?.revision ?? '0';
        await postJson(`${cp.etcdUrl}/v3/kv/compaction`, { revision: rev, physical: true });
        await cp.restartApiServer();
        this.counts.watchExpired++;
        return true;
      }
      case 'schedulerKill': {
        const l = await this.leader();
        l.arm(f.killAfterGangBinds ?? 1);
        await this.submit(killGang(this.o.seed, f.index, f.killAfterGangBinds ?? 1), f.index);
        const died = await new Promise<boolean>((r) => {
          // A timer left behind would hold the process up to a minute after the run.
          const t = setTimeout(() => r(false), 60_000);
          void l.exited.then(() => {
            clearTimeout(t);
            r(true);
          });
        });
        if (died) this.measured.killsMidGang++;
        else l.signal('SIGKILL'); // no gang came its way in time: killed by timing instead
        await l.exited;
        this.counts.schedulerKills++;
        await l.start();
        return true;
      }
      case 'leaderFailover': {
        const l = await this.leader();
        // Paused by its own failpoint in the middle of a gang's binding; by timing if no gang comes its way.
        l.pause(f.pauseAfterGangBinds ?? 1);
        await this.submit(killGang(this.o.seed, f.index, f.pauseAfterGangBinds ?? 1), f.index);
        const stopDeadline = performance.now() + 60_000;
        while (!l.stopped() && performance.now() < stopDeadline) await sleep(100);
        if (l.stopped()) this.measured.pausesMidGang++;
        else l.signal('SIGSTOP');
        await sleep((f.pauseLeases ?? 2) * this.o.leaseDurationSec * 1000);
        const deadline = performance.now() + 60_000;
        while ((await this.holder()) === l.identity && performance.now() < deadline) await sleep(250);
        if ((await this.holder()) !== l.identity) this.counts.leaderFailovers++;
        // The paused leader resumes believing it leads until it looks at the clock: the split-brain case.
        l.signal('SIGCONT');
        return true;
      }
      case 'throttle':
        await this.throttle(f);
        return false;
      case 'slowApi': {
        const p = this.proxy as SlowProxy;
        p.delayMs = f.delayMs ?? 200;
        for (let j = 0; j < 4; j++) await this.submit({ kind: 'Pod', name: `slow-${f.index}-${j}`, gpus: 1, runSec: 5 }, f.index);
        await sleep((f.durationSec ?? 5) * 1000);
        p.delayMs = 0;
        this.counts.slowApiSeconds += f.durationSec ?? 5;
        return false;
      }
    }
  }

  /**
   * APF: a priority level with no seats (nominal 0, no borrowing, reject) and a flow schema sending the replicas'
   * group there, ahead of the defaults: every request of theirs is answered 429 until it is deleted.
   */
  private async throttle(f: Fault): Promise<void> {
    const api = this.api;
    const fc = '/apis/flowcontrol.apiserver.k8s.io/v1';
    const spec = { type: 'Limited', limited: { nominalConcurrencyShares: 0, lendablePercent: 0, borrowingLimitPercent: 0, limitResponse: { type: 'Reject' } } };
    await retry('create the priority level', () =>
      api.post(`${fc}/prioritylevelconfigurations`, { apiVersion: 'flowcontrol.apiserver.k8s.io/v1', kind: 'PriorityLevelConfiguration', metadata: { name: APF_NAME }, spec }),
    );
    await retry('create the flow schema', () =>
      api.post(`${fc}/flowschemas`, {
        apiVersion: 'flowcontrol.apiserver.k8s.io/v1',
        kind: 'FlowSchema',
        metadata: { name: APF_NAME },
        spec: {
          priorityLevelConfiguration: { name: APF_NAME },
          matchingPrecedence: 50,
          distinguisherMethod: { type: 'ByUser' },
          rules: [
            {
              subjects: [{ kind: 'Group', group: { name: REPLICA_GROUP } }],
              resourceRules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'], clusterScope: true, namespaces: ['*'] }],
              nonResourceRules: [{ verbs: ['*'], nonResourceURLs: ['*'] }],
            },
          ],
        },
      }),
    );
    const metrics = (): Promise<number> => httpsGetText(`${this.cp.server}/metrics`, this.cp.token).then((m) => rejectedFor(m, APF_NAME));
    const before = await metrics();
    for (let j = 0; j < 6; j++) await this.submit({ kind: 'Pod', name: `burst-${f.index}-${j}`, gpus: 1, runSec: 5 }, f.index);
    await sleep((f.durationSec ?? 5) * 1000);
    this.measured.rejected429 += (await metrics()) - before;
    await retry('delete the flow schema', () => api.delete(`${fc}/flowschemas/${APF_NAME}`));
    await retry('delete the priority level', () => api.delete(`${fc}/prioritylevelconfigurations/${APF_NAME}`));
    this.counts.throttled++;
  }

  /** Recovery: from the fault until a pod created after it is bound. */
  async probe(f: Fault, startMs: number, disruptive: boolean): Promise<void> {
    const probe = probePod(f.index);
    await this.submit(probe, f.index);
    const slot = slotsOf(probe)[0] as string;
    const deadline = performance.now() + 120_000;
    while (!this.rec.boundAt.has(slot) && performance.now() < deadline) await sleep(100);
    const at = this.rec.boundAt.get(slot);
    if (disruptive && at !== undefined) this.measured.recovery.push((at - startMs) / 1000);
  }

  async ownersAtEnd(): Promise<Set<string>> {
    const lists = await Promise.all(
      ['trainingjobs', 'inferenceservices'].map((r) => this.api.get<{ items: { metadata?: { uid?: string } }[] }>(`/apis/${GROUP_VERSION}/namespaces/${CHAOS_NS}/${r}`)),
    );
    return new Set(lists.flatMap((l) => l.items.map((i) => i.metadata?.uid ?? '')));
  }

  /** The quiet period, the wait for the last pods, the services deleted and garbage-collected. */
  async settle(): Promise<void> {
    this.say.status(`quiet period (${this.o.quietSec} s)`);
    await sleep(this.o.quietSec * 1000);
    const unbound = (): string[] => [...this.sub.slots].filter((s) => !this.rec.boundAt.has(s));
    const deadline = performance.now() + this.o.settleTimeoutSec * 1000;
    while (unbound().length > 0 && performance.now() < deadline) {
      this.say.status(`waiting for ${unbound().length} slots to be bound`);
      await sleep(500);
    }
    await this.deleteServices(Number.POSITIVE_INFINITY);
    const gcDeadline = performance.now() + 60_000;
    while (performance.now() < gcDeadline) {
      const owners = await this.ownersAtEnd();
      const list = await this.api.get<{ items: V1Pod[] }>(`/api/v1/namespaces/${CHAOS_NS}/pods`);
      const orphaned = list.items.filter((p) => p.metadata?.ownerReferences?.some((r) => !owners.has(r.uid)));
      if (orphaned.length === 0) break;
      this.say.status(`waiting for garbage collection of ${orphaned.length} pods`);
      await sleep(1000);
    }
    await sleep(2000);
  }

  async report(plan: readonly Fault[]): Promise<ChaosResult> {
    const o = this.o;
    const endMs = Date.now();
    const finalPods = (await this.api.get<{ items: V1Pod[] }>(`/api/v1/namespaces/${CHAOS_NS}/pods`)).items
      .filter((p) => p.spec?.schedulerName === SCHEDULER_NAME)
      .map((p) => obsOf(endMs, 'MODIFIED', p));
    const owners = await this.ownersAtEnd();
    for (const r of this.replicas) await r.stop();
    const audit = existsSync(this.auditPath) ? parseAudit(readFileSync(this.auditPath, 'utf8'), SCHEDULER_NAME) : { binds: [], deletes: [], leases: [] };
    if (audit.binds.length === 0) throw new Error(`the audit log ${this.auditPath} holds no bindings: the invariants would prove nothing`);
    const report = checkInvariants({
      nodeGpus: new Map(this.nodes.map((n) => [n.name, GPUS_PER_NODE])),
      pods: this.rec.pods,
      binds: audit.binds,
      deletes: audit.deletes,
      leases: audit.leases,
      replicaOf: new Map(this.replicas.map((r) => [r.user, r.identity])),
      gangSize: this.sub.gangSize,
      submittedSlots: this.sub.slots,
      expectedChildren: this.sub.expectedChildren,
      ownersAtEnd: owners,
      podsAtEnd: finalPods,
      gangWindowMs: o.gangWindowSec * 1000,
      endMs,
    });
    const unexpected = this.replicas.reduce((s, r) => s + r.unexpectedExits, 0);
    return {
      seed: o.seed,
      nodes: o.nodes,
      gpusPerNode: GPUS_PER_NODE,
      leaseDurationSec: o.leaseDurationSec,
      gangWindowSec: o.gangWindowSec,
      plan,
      faults: { ...this.counts, slowApiSeconds: round2(this.counts.slowApiSeconds) },
      invariants: report.invariants,
      pods: { submitted: this.sub.slots.size, bound: [...this.sub.slots].filter((s) => this.rec.boundAt.has(s)).length },
      recoverySec: { p50: round2(pct(this.measured.recovery, 50)), max: round2(Math.max(0, ...this.measured.recovery)) },
      observed: {
        killsMidGang: this.measured.killsMidGang,
        pausesMidGang: this.measured.pausesMidGang,
        nonLeaderPodDeletes: report.nonLeaderDeletes,
        watch410: this.watch410,
        replacedInGap: this.rec.replacedInGap,
        rejected429: this.measured.rejected429,
        maxPartialGangSec: round2(Math.max(0, ...report.partialGangMs) / 1000),
        recoverySecEach: this.measured.recovery.map(round2),
        wallSec: this.elapsedSec(),
      },
      violations: [...report.violations, ...(unexpected > 0 ? [`${unexpected} replica exits nobody caused`] : [])],
      evidence: Object.fromEntries(
        report.involved.map((name) => [
          name,
          this.rec.pods.filter((p) => `${p.ns}/${p.name}` === name).map((p) => ({ ...p, t: round2((p.t - this.startWallMs) / 1000) })),
        ]),
      ),
    };
  }

  async close(): Promise<void> {
    for (const r of this.replicas) await r.stop().catch(() => undefined);
    this.recorder?.stop();
    this.kubelet?.stop();
    await this.proxy?.close();
    this.client?.close();
    await this.plane?.stop();
    if (process.env['SITS_KEEP_CONTROL_PLANE_DIR']) this.log(`kept ${this.dir}`);
    else rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Runs the whole bench: cluster, replicas, plan, quiet period, invariants. */
export async function runChaos(o: ChaosOptions): Promise<ChaosResult> {
  const plan = makePlan({ seed: o.seed, counts: o.counts, gapSec: o.gapSec, windowSec: o.windowSec });
  sweepStaleScratch('sits-chaos-');
  const run = new ChaosRun(o);
  const say = run.say;
  try {
    say.line(`chaos: seed ${o.seed}, ${o.nodes} nodes × ${GPUS_PER_NODE} GPUs, ${plan.length} faults; starting the control plane`);
    await run.setup();
    say.line(`chaos: control plane, ${o.nodes} nodes, kube-controller-manager and 2 replicas up in ${run.elapsedSec()} s`);
    for (const f of plan) {
      say.status(`fault ${f.index + 1}/${plan.length}: ${f.kind} (${run.elapsedSec()} s)`);
      for (const r of run.replicas) if (!r.running) await r.start(); // a replica that died by itself: counted, restarted
      for (const s of submissionsFor(o.seed, f.index)) await run.submit(s, f.index);
      const startMs = Date.now();
      const disruptive = await run.inject(f);
      await run.probe(f, startMs, disruptive);
      await run.deleteServices(f.index - 3);
      await sleep(f.gapSec * 1000);
    }
    await run.settle();
    say.status('');
    return await run.report(plan);
  } finally {
    await run.close();
  }
}
