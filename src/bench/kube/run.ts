/**
 * `sits bench kube`: kube-scheduler and the SITS scheduler, each on its own fresh control plane (etcd +
 * kube-apiserver built from source), on the same fake nodes and the same plain 1-GPU pods, created by the same
 * code with the same concurrency while the scheduler runs; a pod is done when the benchmark's watch shows
 * `spec.nodeName` set. Throughput is computed as scheduler_perf does. The method and its reasons are in
 * docs/adr/0020-kube-scheduler-benchmark-method.md.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { request as httpsRequest } from 'node:https';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { KubeClient } from '../../kube/client/client.ts';
import { startControlPlane, type ControlPlane } from '../../harness/control-plane.ts';
import { SCHEDULER_NAME } from '../../api/wire.ts';
import { median, percentiles } from '../../core/stats.ts';
import { boundVerdict, histogramDelta, histogramQuantile, kubeSchedulerConfigYaml, promSum, rate, schedulerPerfThroughput, type ThroughputSummary } from './measure.ts';
import { promSamples, type Sample } from '../../harness/prom-text.ts';
import { BindWatch, LatencyProbe, ScheduledEventWatch } from './observer.ts';
import { CpuMeter, diff, loadAverage, processName, residentMiB, withOther } from './proc.ts';
import { benchConstraint, benchNodes, benchPod, constraintViolations, createNodes, type BenchMix, createWithRetry, gpusPerNode, podName, runPool, type NodeShapeChoice } from './workload.ts';
import type { SitsChildConfig } from './sits-child.ts';
import { HEAP_NODE_OPTION, maxOldSpaceMiB } from '../../deploy/heap-cap.ts';
import { DEFAULT_VALUES } from '../../deploy/values.ts';

export type SchedulerId = 'kube-scheduler' | 'sits';

export interface KubeBenchOptions {
  readonly nodes: number;
  readonly pods: number;
  readonly shape: NodeShapeChoice;
  /** kube-scheduler clientConnection.qps and .burst. */
  readonly qps: number;
  readonly burst: number;
  /** SITS KubeClient requests in flight at most (it has no QPS limiter). */
  readonly maxInFlight: number;
  /** Parallel pod creators (scheduler_perf: 30), also used for nodes. */
  readonly createConcurrency: number;
  /**
   * streamed (scheduler_perf): the scheduler runs, then the pods are created and the window starts at the
   * first POST; precreated: all pods exist first, the window starts when the scheduler process is started.
   */
  readonly mode: 'streamed' | 'precreated';
  readonly runs: number;
  readonly schedulers: readonly SchedulerId[];
  readonly sitsProfile: string;
  /** What the pods ask for besides one GPU (workload.ts BenchMix). */
  readonly mix?: BenchMix;
  /** Write a V8 CPU profile of each SITS scheduler process into this folder. */
  readonly sitsCpuProfDir?: string;
  /** Write V8 heap snapshots of each SITS scheduler process into this folder: halfway through binding, and once its pods are bound. */
  readonly sitsHeapSnapshotDir?: string;
  /** The SITS process gets the old-space cap a container with this memory limit gets (heap-cap.ts); absent: V8's default for this host. */
  readonly sitsMemoryLimit?: string;
  readonly timeoutSec: number;
  /** Pause between the scheduler being ready and the first pod (lets start-up work settle). */
  readonly settleMs: number;
  readonly binDir?: string;
  readonly progress: Progress;
  readonly verbose?: boolean;
}

export interface Progress {
  /** A line that stays. */
  line(msg: string): void;
  /** A status line that is overwritten (TTY) or printed every few seconds. */
  status(msg: string): void;
}

export interface LatencySummary {
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly max: number;
  readonly n: number;
}

export interface SchedulerRun {
  readonly scheduler: SchedulerId;
  readonly run: number;
  readonly mode: 'streamed' | 'precreated';
  /** scheduler_perf's SchedulingThroughput average (the headline). */
  readonly podsPerSecond: number;
  readonly throughput: ThroughputSummary | null;
  /** Pods / (last bind seen − window start). */
  readonly overallPodsPerSecond: number;
  /** Until the last pod's Scheduled event was seen too (events queued behind bindings are still owed work). */
  readonly withEvents: { readonly scheduledEvents: number; readonly seconds: number; readonly podsPerSecond: number; readonly cpuSeconds: Readonly<Record<string, number>>; readonly cpuCores: Readonly<Record<string, number>> };
  readonly createPodsPerSecond: number;
  readonly windowSeconds: number;
  readonly createSeconds: number;
  readonly bound: number;
  readonly timeToBindMs: LatencySummary;
  readonly cpuSeconds: Readonly<Record<string, number>>;
  readonly cpuCores: Readonly<Record<string, number>>;
  /** CPU milliseconds per bound pod of each process, until the last Scheduled event (events included). */
  readonly cpuMsPerPod: Readonly<Record<string, number>>;
  readonly eventLoopUtilization?: number;
  readonly boundBy: string;
  readonly api: {
    readonly probeWriteMs: LatencySummary;
    readonly probeWatchLagMs: LatencySummary;
    readonly probeGetMs: LatencySummary;
    /** Server-side mean latency (apiserver_request_duration_seconds) in the window. */
    readonly serverMeanMs: Readonly<Record<string, number>>;
    readonly serverP99Ms: Readonly<Record<string, number>>;
    readonly serverRequests: Readonly<Record<string, number>>;
  };
  readonly schedulerRequests: number;
  readonly schedulerDetails: Readonly<Record<string, unknown>>;
  readonly overcommittedNodes: number;
  /** Constraints mix: pods bound against their required node affinity or on a tainted node without the toleration. */
  readonly constraintViolations: number;
  readonly loadAverage: { readonly before: number; readonly after: number };
  readonly timeline: readonly { readonly s: number; readonly created: number; readonly bound: number; readonly events: number; readonly cores: Readonly<Record<string, number>> }[];
}

export interface KubeBenchResult {
  readonly nodes: number;
  readonly pods: number;
  readonly sits: { readonly podsPerSecond: number } & Partial<Summary>;
  readonly kubeScheduler: { readonly podsPerSecond: number } & Partial<Summary>;
  readonly ratio: number;
  /** The same ratio for the other two rates: pods/(window to last bind), and until the last Scheduled event. */
  readonly ratioOverall: number;
  readonly ratioWithEvents: number;
  /**
   * Per run index, the two schedulers measured back to back (K S, then S K, …): ratios of runs that saw
   * similar machine load, with the cores other processes took during each (`other`).
   */
  readonly pairs: readonly { readonly run: number; readonly ratio: number; readonly ratioOverall: number; readonly ratioWithEvents: number; readonly otherCores: { readonly sits: number; readonly kubeScheduler: number } }[];
  readonly method: Readonly<Record<string, unknown>>;
  /** The commit the schedulers ran from, and source files that differed from it (other engineers' work in progress). */
  readonly source: { readonly commit: string; readonly modified: readonly string[] };
  readonly machine: Readonly<Record<string, unknown>>;
  readonly runs: readonly SchedulerRun[];
}

interface Summary {
  readonly runs: number;
  readonly podsPerSecondPerRun: readonly number[];
  readonly overallPodsPerSecond: number;
  readonly podsPerSecondWithEvents: number;
  readonly timeToBindP50Ms: number;
  readonly timeToBindP99Ms: number;
  readonly cpuCores: Readonly<Record<string, number>>;
  readonly boundBy: string;
}

const NAMESPACE = 'bench';
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const round = (x: number, d = 1): number => (Number.isFinite(x) ? Math.round(x * 10 ** d) / 10 ** d : x);

function latency(values: readonly number[]): LatencySummary {
  // An empty sample reports NaN (printed as such).
  const [p50, p90, p99, max] = percentiles(values, [50, 90, 99, 100]).map((v) => round(v ?? Number.NaN));
  return { p50: p50 as number, p90: p90 as number, p99: p99 as number, max: max as number, n: values.length };
}

/** Median over runs, ignoring runs that measured nothing (NaN). */
const medianOfRuns = (xs: readonly number[]): number => median(xs.filter(Number.isFinite));

function httpsText(url: string, token: string, timeoutMs = 20_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(url, { method: 'GET', headers: { Authorization: `Bearer ${token}` }, rejectUnauthorized: false, timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => ((res.statusCode ?? 0) === 200 ? resolve(Buffer.concat(chunks).toString('utf8')) : reject(new Error(`GET ${url}: ${res.statusCode}`))));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${url}: timed out`)));
    req.on('error', reject);
    req.end();
  });
}

async function scrape(url: string, token: string): Promise<Sample[]> {
  let text: string;
  try {
    text = await httpsText(url, token);
  } catch {
    return [];
  }
  // Outside the try: output the strict parser refuses is a bug to see, not a run without numbers.
  return promSamples(text);
}

/** The heap cap SITS runs with in the bench: the one the chart's scheduler container (its memory limit) gets. */
/** The chart's memory limit of the scheduler container (resources.limits.memory): the bench's default. */
export const CHART_MEMORY_LIMIT = String(DEFAULT_VALUES.resources.limits?.memory ?? '');

/** The heap cap of the SITS process for a container memory limit (none: V8's default for this host), for the JSON. */
export function sitsHeap(memoryLimit: string | undefined): Record<string, unknown> {
  if (memoryLimit === undefined) return { memoryLimit: 'none', maxOldSpaceMiB: 'V8 default for this host' };
  return {
    memoryLimit,
    nodeOption: HEAP_NODE_OPTION,
    maxOldSpaceMiB: maxOldSpaceMiB(memoryLimit),
    why: `the chart's scheduler container starts Node with ${HEAP_NODE_OPTION} of its limits.memory (${CHART_MEMORY_LIMIT}); this host has no cgroup limit, so the child gets the same cap as --max-old-space-size (ADR 0190)`,
  };
}

/** The SITS scheduler in its own process (sits-child.ts), talking JSON lines on stdio. */
export class SitsProcess {
  readonly child: ChildProcess;
  private readonly replies: ((o: Record<string, unknown>) => void)[] = [];
  private readonly ready: Promise<Record<string, unknown>>;
  readonly stderrTail: string[] = [];
  private readonly exited: Promise<number | null>;

  constructor(cfg: SitsChildConfig, cpuProfDir: string | undefined, log?: (m: string) => void) {
    // From source the child is TypeScript and needs the loader; the build points this at its compiled entry.
    const entry = fileURLToPath(new URL('./sits-child.ts', import.meta.url));
    // (Under vitest import.meta.resolve is missing: there the repository's own tsx is found by name.)
    const tsx = typeof import.meta.resolve === 'function' ? import.meta.resolve('tsx') : 'tsx';
    const loader = entry.endsWith('.ts') ? ['--import', tsx] : [];
    const prof = cpuProfDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${cpuProfDir}`];
    const gc = cfg.gcBeforeSample === true ? ['--expose-gc'] : [];
    const heap = cfg.maxOldSpaceMiB === undefined ? [] : [`--max-old-space-size=${cfg.maxOldSpaceMiB}`];
    this.child = spawn(process.execPath, [...prof, ...gc, ...heap, ...loader, entry, JSON.stringify(cfg)], { stdio: ['pipe', 'pipe', 'pipe'] });
    this.exited = new Promise((r) => this.child.once('exit', (code) => r(code)));
    let onReady: (o: Record<string, unknown>) => void = () => undefined;
    let onFail: (e: Error) => void = () => undefined;
    this.ready = new Promise((res, rej) => {
      onReady = res;
      onFail = rej;
    });
    void this.exited.then((code) => onFail(new Error(`SITS scheduler process exited (code ${code}) before it was ready:\n${this.stderrTail.join('\n')}`)));
    createInterface({ input: this.child.stdout as NodeJS.ReadableStream }).on('line', (l) => {
      let o: Record<string, unknown>;
      try {
        o = JSON.parse(l) as Record<string, unknown>;
      } catch {
        return;
      }
      if (o.type === 'ready') onReady(o);
      else this.replies.shift()?.(o);
    });
    createInterface({ input: this.child.stderr as NodeJS.ReadableStream }).on('line', (l) => {
      this.stderrTail.push(l);
      if (this.stderrTail.length > 40) this.stderrTail.shift();
      log?.(`[sits] ${l}`);
    });
  }

  get pid(): number {
    return this.child.pid as number;
  }

  waitReady(): Promise<Record<string, unknown>> {
    return this.ready;
  }

  stats(): Promise<Record<string, unknown>> {
    return this.ask('stats');
  }

  /** Sends one command line and resolves with the next reply (replies come in order). */
  ask(cmd: 'stats' | 'sample'): Promise<Record<string, unknown>> {
    return new Promise((resolve) => {
      this.replies.push(resolve);
      this.child.stdin?.write(`${cmd}\n`);
    });
  }

  /** Writes a heap snapshot of the scheduler process to `file` (resolves once written). */
  heapSnapshot(file: string): Promise<Record<string, unknown>> {
    return new Promise((resolve) => {
      this.replies.push(resolve);
      this.child.stdin?.write(`heap ${file}\n`);
    });
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.stdin?.write('stop\n');
    const done = await Promise.race([this.exited.then(() => true), sleep(20_000).then(() => false)]);
    if (!done) {
      this.child.kill('SIGKILL');
      await this.exited;
    }
  }
}

/** One scheduler on one fresh control plane. */
export async function runOne(o: KubeBenchOptions, scheduler: SchedulerId, runIndex: number): Promise<SchedulerRun> {
  const tag = `[${scheduler} ${runIndex + 1}/${o.runs}]`;
  const p = o.progress;
  p.line(`${tag} starting a fresh control plane`);
  const plane: ControlPlane = await startControlPlane({ ...(o.binDir === undefined ? {} : { binDir: o.binDir }), ...(o.verbose === true ? { log: (l: string) => p.line(l) } : {}) });
  let sits: SitsProcess | undefined;
  const clients: KubeClient[] = [];
  const cleanup: (() => void)[] = [];
  try {
    const kc = plane.kubeConfig();
    const creator = new KubeClient(kc, { maxInFlight: o.createConcurrency, userAgent: 'sits-bench-creator' });
    const watcher = new KubeClient(kc, { maxInFlight: 8, userAgent: 'sits-bench-watch' });
    const prober = new KubeClient(kc, { maxInFlight: 4, userAgent: 'sits-bench-probe' });
    clients.push(creator, watcher, prober);
    const pids = new Map<string, number>();
    for (const pid of plane.childPids()) {
      const n = processName(pid);
      if (n === 'etcd' || n === 'kube-apiserver') pids.set(n, pid);
    }
    await creator.post('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } });
    const t0Nodes = performance.now();
    const nodeObjects = benchNodes(o.nodes, o.shape, o.mix ?? 'plain');
    await createNodes(creator, nodeObjects, o.createConcurrency);
    const racks = Math.ceil(o.nodes / o.shape.nodesPerRack);

    const schedulerName = scheduler === 'kube-scheduler' ? 'default-scheduler' : SCHEDULER_NAME;
    let metricsUrl: string | undefined;
    pids.set('bench', process.pid);
    const meter = new CpuMeter(pids);
    const startScheduler = async (): Promise<void> => {
      if (scheduler === 'kube-scheduler') {
        // Its pid is known only once it is ready; find it as soon as it runs, so that the timeline's CPU
        // samples charge its start-up to it (not to `other`).
        const find = setInterval(() => {
          for (const pid of plane.childPids()) if (processName(pid) === 'kube-scheduler') pids.set('kube-scheduler', pid);
          if (pids.has('kube-scheduler')) clearInterval(find);
        }, 10);
        const s = await plane.startScheduler(kubeSchedulerConfigYaml(o.qps, o.burst)).finally(() => clearInterval(find));
        pids.set('kube-scheduler', s.pid);
        metricsUrl = `${s.url}/metrics`;
      } else {
        sits = new SitsProcess(
          {
            kubeconfig: plane.kubeconfigPath,
            maxInFlight: o.maxInFlight,
            events: true,
            profile: o.sitsProfile,
            ...(o.sitsMemoryLimit === undefined ? {} : { maxOldSpaceMiB: maxOldSpaceMiB(o.sitsMemoryLimit) }),
          },
          o.sitsCpuProfDir, o.verbose === true ? (l) => p.line(l) : undefined);
        pids.set('sits', sits.pid);
        const ready = await sits.waitReady();
        if (ready.nodes !== o.nodes) throw new Error(`SITS scheduler sees ${String(ready.nodes)} nodes, expected ${o.nodes}`);
      }
    };
    const createStart = new Map<number, number>();
    let created = 0;
    const createAll = (): Promise<void> =>
      runPool(o.pods, o.createConcurrency, async (i) => {
        createStart.set(i, performance.now());
        await createWithRetry(creator, `/api/v1/namespaces/${NAMESPACE}/pods`, benchPod(NAMESPACE, podName(i), schedulerName, o.mix === 'constraints' ? benchConstraint(i, racks) : undefined));
        created++;
      });

    const watch = new BindWatch(watcher, NAMESPACE);
    await watch.start();
    const events = new ScheduledEventWatch(watcher, NAMESPACE);
    await events.start();
    const probe = new LatencyProbe(prober, NAMESPACE);
    await probe.start();
    cleanup.push(() => watch.stop(), () => events.stop(), () => probe.stop());
    const apiMetrics = `${plane.server}/metrics`;
    if (o.mode === 'streamed') {
      p.line(`${tag} ${o.nodes} nodes created in ${((performance.now() - t0Nodes) / 1000).toFixed(1)} s; starting ${scheduler}`);
      await startScheduler();
    } else {
      const tc = performance.now();
      await createAll();
      while (watch.seenAt.size < o.pods) await sleep(50);
      p.line(`${tag} ${o.nodes} nodes and ${o.pods} pods created in ${((performance.now() - t0Nodes) / 1000).toFixed(1)} s (pods: ${((performance.now() - tc) / 1000).toFixed(1)} s); the scheduler starts inside the measured window`);
    }
    await sleep(o.settleMs);
    const apiBefore = await scrape(apiMetrics, plane.token);
    const schedBefore = metricsUrl === undefined ? [] : await scrape(metricsUrl, plane.token);
    const sitsBefore = await sits?.stats();
    const loadBefore = loadAverage();

    // ---- measured window: from the first pod POST (streamed) or the scheduler's start (precreated) to the last pod seen bound
    const cpu0 = meter.sample();
    const t0 = performance.now();
    const timeline: { s: number; created: number; bound: number; events: number; cores: Record<string, number>; sitsRssMiB?: number }[] = [];
    let halfSnapshot = o.sitsHeapSnapshotDir === undefined;
    let lastCpu = cpu0;
    let lastTick = t0;
    const ticker = setInterval(() => {
      const now = performance.now();
      const cpu = meter.sample();
      const cores = coresOver(withOther(diff(lastCpu, cpu)), (now - lastTick) / 1000);
      const rss = sits === undefined ? undefined : residentMiB(sits.pid);
      timeline.push({ s: round((now - t0) / 1000), created, bound: watch.boundAt.size, events: events.seenAt.size, cores, ...(rss === undefined ? {} : { sitsRssMiB: rss }) });
      // Halfway through binding, what the scheduler holds while it works (the end shows what it keeps).
      if (!halfSnapshot && sits !== undefined && o.sitsHeapSnapshotDir !== undefined && watch.boundAt.size >= o.pods / 2) {
        halfSnapshot = true;
        const file = resolve(join(o.sitsHeapSnapshotDir, `sits-${o.nodes}x${o.pods}-run${runIndex + 1}-half.heapsnapshot`));
        void sits.heapSnapshot(file).then(() => p.line(`${tag} heap snapshot of the SITS process halfway: ${file}`));
      }
      lastCpu = cpu;
      lastTick = now;
      p.status(`${tag} created ${created}/${o.pods}  bound ${watch.boundAt.size}/${o.pods}  events ${events.seenAt.size}  ~${recentRate(timeline).toFixed(0)} pods/s  cores: ${Object.entries(cores).map(([k, v]) => `${k} ${v.toFixed(2)}`).join(', ')}`);
    }, 1000);
    cleanup.push(() => clearInterval(ticker));
    probe.run();
    if (o.mode === 'streamed') await createAll();
    else await startScheduler();
    const tCreated = performance.now();
    const all = await watch.waitBound(o.pods, o.timeoutSec * 1000);
    const cpu1 = meter.sample();
    const tEnd = performance.now();
    const sitsAtBind = await sits?.stats();
    probe.stop();
    // Binding is done; the Scheduled events may still be owed (SITS queues them behind its bindings).
    const eventsDone = await events.waitCount(o.pods, 60_000);
    const cpu2 = meter.sample();
    const tEvents = performance.now();
    const sitsAfter = await sits?.stats();
    clearInterval(ticker);
    if (sits !== undefined && o.sitsHeapSnapshotDir !== undefined) {
      const file = resolve(join(o.sitsHeapSnapshotDir, `sits-${o.nodes}x${o.pods}-run${runIndex + 1}.heapsnapshot`));
      await sits.heapSnapshot(file);
      p.line(`${tag} heap snapshot of the SITS process: ${file}`);
    }
    const loadAfter = loadAverage();
    p.status('');
    if (!all) p.line(`${tag} timed out after ${o.timeoutSec} s with ${watch.boundAt.size}/${o.pods} pods bound`);
    if (!eventsDone) p.line(`${tag} only ${events.seenAt.size}/${o.pods} Scheduled events were written (no progress for 60 s)`);

    const apiAfter = await scrape(apiMetrics, plane.token);
    const schedAfter = metricsUrl === undefined ? [] : await scrape(metricsUrl, plane.token);

    // ---- results
    const result = runResult({ o, scheduler, runIndex, tag, watch, events, probe, createStart, nodeObjects, racks, all, t0, tCreated, tEnd, tEvents, cpu0, cpu1, cpu2, sitsBefore, sitsAtBind, sitsAfter, apiBefore, apiAfter, schedBefore, schedAfter, loadBefore, loadAfter, timeline, ranSits: sits !== undefined }, (l) => p.line(l));
    const { boundBy, overcommittedNodes } = result;
    p.line(
      `${tag} ${result.bound}/${o.pods} bound in ${result.windowSeconds} s: ${result.podsPerSecond} pods/s (scheduler_perf average), ${result.overallPodsPerSecond} overall, ` +
        `${result.withEvents.podsPerSecond} counting until the last Scheduled event (${result.withEvents.seconds} s); ` +
        `time-to-bind p50 ${result.timeToBindMs.p50} ms p99 ${result.timeToBindMs.p99} ms; ${boundBy}`,
    );
    if (overcommittedNodes > 0) p.line(`${tag} WARNING: ${overcommittedNodes} nodes hold more 1-GPU pods than they have GPUs`);
    return result;
  } finally {
    for (const c of cleanup) c();
    await sits?.stop();
    for (const c of clients) c.close();
    await plane.stop();
  }
}

function summarize(runs: readonly SchedulerRun[]): { podsPerSecond: number } & Summary {
  const cores: Record<string, number> = {};
  const keys = new Set(runs.flatMap((r) => Object.keys(r.cpuCores)));
  for (const k of keys) cores[k] = round(medianOfRuns(runs.map((r) => r.cpuCores[k] ?? Number.NaN)), 2);
  const mid = [...runs].sort((a, b) => a.podsPerSecond - b.podsPerSecond)[Math.floor((runs.length - 1) / 2)];
  return {
    podsPerSecond: round(medianOfRuns(runs.map((r) => r.podsPerSecond))),
    runs: runs.length,
    podsPerSecondPerRun: runs.map((r) => r.podsPerSecond),
    overallPodsPerSecond: round(medianOfRuns(runs.map((r) => r.overallPodsPerSecond))),
    podsPerSecondWithEvents: round(medianOfRuns(runs.map((r) => r.withEvents.podsPerSecond))),
    timeToBindP50Ms: round(medianOfRuns(runs.map((r) => r.timeToBindMs.p50))),
    timeToBindP99Ms: round(medianOfRuns(runs.map((r) => r.timeToBindMs.p99))),
    cpuCores: cores,
    boundBy: mid?.boundBy ?? '',
  };
}

function sourceState(): { commit: string; modified: string[] } {
  const cwd = fileURLToPath(new URL('../../..', import.meta.url));
  try {
    const commit = execFileSync('git', ['rev-parse', 'HEAD'], { cwd, encoding: 'utf8' }).trim();
    const modified = execFileSync('git', ['status', '--porcelain', '--', 'src'], { cwd, encoding: 'utf8' })
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => l.slice(3));
    return { commit, modified };
  } catch {
    return { commit: 'unknown', modified: [] };
  }
}

/** All runs; kube-scheduler and SITS alternate (K S, then S K, …) so that drifting machine load hits both. */
export async function runKubeBench(o: KubeBenchOptions): Promise<KubeBenchResult> {
  const source = sourceState();
  const runs: SchedulerRun[] = [];
  for (let r = 0; r < o.runs; r++) {
    const order = r % 2 === 0 ? o.schedulers : [...o.schedulers].reverse();
    for (const s of order) runs.push(await runOne(o, s, r));
  }
  const sitsRuns = runs.filter((r) => r.scheduler === 'sits');
  const kubeRuns = runs.filter((r) => r.scheduler === 'kube-scheduler');
  const sits = sitsRuns.length > 0 ? summarize(sitsRuns) : { podsPerSecond: Number.NaN };
  const kube = kubeRuns.length > 0 ? summarize(kubeRuns) : { podsPerSecond: Number.NaN };
  const pairs = sitsRuns.flatMap((sr) => {
    const kr = kubeRuns.find((k) => k.run === sr.run);
    if (kr === undefined) return [];
    return [
      {
        run: sr.run,
        ratio: round(sr.podsPerSecond / kr.podsPerSecond, 2),
        ratioOverall: round(sr.overallPodsPerSecond / kr.overallPodsPerSecond, 2),
        ratioWithEvents: round(sr.withEvents.podsPerSecond / kr.withEvents.podsPerSecond, 2),
        otherCores: { sits: sr.cpuCores.other ?? Number.NaN, kubeScheduler: kr.cpuCores.other ?? Number.NaN },
      },
    ];
  });
  return {
    nodes: o.nodes,
    pods: o.pods,
    sits,
    kubeScheduler: kube,
    ratio: round(sits.podsPerSecond / kube.podsPerSecond, 2),
    ratioOverall: round(((sits as Partial<Summary>).overallPodsPerSecond ?? Number.NaN) / ((kube as Partial<Summary>).overallPodsPerSecond ?? Number.NaN), 2),
    ratioWithEvents: round(((sits as Partial<Summary>).podsPerSecondWithEvents ?? Number.NaN) / ((kube as Partial<Summary>).podsPerSecondWithEvents ?? Number.NaN), 2),
    pairs,
    method: {
      podsPerSecond: 'scheduler_perf SchedulingThroughput average: 1-s samples of pods seen bound over the window, first sample skipped; median over runs',
      mode: o.mode,
      creation:
        o.mode === 'streamed'
          ? `streamed (as scheduler_perf): the scheduler is running and synced, then the pods are created by ${o.createConcurrency} parallel creators (scheduler_perf: 30), same code for both; window from the first pod POST to the last pod seen bound`
          : `precreated: all pods created (${o.createConcurrency} parallel creators) before the scheduler starts; window from the scheduler's start (process spawn) to the last pod seen bound`,
      done: 'the benchmark watch shows spec.nodeName set',
      nodeShape: o.shape.preset ?? `plain, ${o.shape.gpusPerNode}× ${o.shape.gpuModel}`,
      gpusPerNode: gpusPerNode(o.shape),
      pod: '1 nvidia.com/gpu, 100m CPU, 500Mi',
      mix: o.mix === 'constraints' ? 'constraints: every second pod with, in rotation, a required node affinity In half the racks, a preferred node affinity (weight 50, block-0), a toleration of the taint on every 8th node, a required NotIn rack-0, a required hostname anti-affinity within one of 8 groups, a DoNotSchedule hostname spread (maxSkew 1) within one of 8 groups' : 'plain',
      kubeSchedulerClient: { qps: o.qps, burst: o.burst },
      sitsClient: { maxInFlight: o.maxInFlight, qpsLimit: 'none' },
      events: 'on for both (kube-scheduler cannot switch its events off)',
      sitsProfile: o.sitsProfile,
      sitsHeap: sitsHeap(o.sitsMemoryLimit),
      controlPlane: 'fresh etcd + kube-apiserver v1.36.3 per scheduler per run; admin token (system:masters, exempt from API priority and fairness) for everyone',
      adr: 'docs/adr/0020-kube-scheduler-benchmark-method.md',
    },
    source,
    machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model ?? '', node: process.version, date: new Date().toISOString() },
    runs,
  };
}

/** Cores used per process over `seconds` from the CPU seconds each used. */
function coresOver(cpuSeconds: Record<string, number>, seconds: number): Record<string, number> {
  const cores: Record<string, number> = {};
  for (const [k, v] of Object.entries(cpuSeconds)) cores[k] = round(v / seconds, 2);
  return cores;
}

/** Pods bound per second over the last three timeline ticks (for the progress line). */
function recentRate(timeline: readonly { readonly bound: number }[]): number {
  const recent = timeline.slice(-3);
  return recent.length < 2 ? 0 : ((recent.at(-1)?.bound ?? 0) - (recent[0]?.bound ?? 0)) / (recent.length - 1 || 1);
}

/** Each bound pod's time to bind: from its POST (streamed), or from the scheduler's start (precreated: every pod was already waiting). */
function timesToBind(o: KubeBenchOptions, boundAt: ReadonlyMap<string, number>, createStart: ReadonlyMap<number, number>, t0: number): number[] {
  const ttb: number[] = [];
  for (let i = 0; i < o.pods; i++) {
    const b = boundAt.get(podName(i));
    const c = o.mode === 'streamed' ? createStart.get(i) : t0;
    if (b !== undefined && c !== undefined) ttb.push(b - c);
  }
  return ttb;
}

/** The SITS process's event-loop utilization between two stats replies. */
function eventLoopUtilization(before: Record<string, unknown>, after: Record<string, unknown>): number | undefined {
  const b = before.eventLoop as { idleMs: number; activeMs: number };
  const a = after.eventLoop as { idleMs: number; activeMs: number };
  const active = a.activeMs - b.activeMs;
  const idle = a.idleMs - b.idleMs;
  return active + idle > 0 ? active / (active + idle) : undefined;
}

/** The apiserver's own view of the window, per request kind: mean and p99 latency, and request counts. */
function apiServerStats(apiBefore: readonly Sample[], apiAfter: readonly Sample[]): { serverMeanMs: Record<string, number>; serverP99Ms: Record<string, number>; serverRequests: Record<string, number> } {
  const kinds: Record<string, Record<string, string>> = {
    binding: { verb: 'POST', resource: 'pods', subresource: 'binding' },
    createPod: { verb: 'POST', resource: 'pods', subresource: '' },
    createEvent: { verb: 'POST', resource: 'events' },
    patchPodStatus: { verb: 'PATCH', resource: 'pods', subresource: 'status' },
  };
  const serverMeanMs: Record<string, number> = {};
  const serverP99Ms: Record<string, number> = {};
  const serverRequests: Record<string, number> = {};
  for (const [k, want] of Object.entries(kinds)) {
    const h = histogramDelta(apiBefore, apiAfter, 'apiserver_request_duration_seconds', want);
    serverMeanMs[k] = round(h.meanMs);
    serverRequests[k] = h.count;
    serverP99Ms[k] = round(histogramQuantile(apiBefore, apiAfter, 'apiserver_request_duration_seconds', 0.99, want) * 1000);
  }
  serverRequests.all = promSum(apiAfter, 'apiserver_request_total') - promSum(apiBefore, 'apiserver_request_total');
  return { serverMeanMs, serverP99Ms, serverRequests };
}

/** kube-scheduler's metrics over the window: where its serial loop spent the time (added to the verdict) and its client's limits. */
function kubeSchedulerStats(schedBefore: readonly Sample[], schedAfter: readonly Sample[], windowSeconds: number, o: KubeBenchOptions): { boundBy: string; details: Record<string, unknown> } {
const attempts = histogramDelta(schedBefore, schedAfter, 'scheduler_scheduling_attempt_duration_seconds', { result: 'scheduled' });
const limiter = histogramDelta(schedBefore, schedAfter, 'rest_client_rate_limiter_duration_seconds');
const restLatency = histogramDelta(schedBefore, schedAfter, 'rest_client_request_duration_seconds', { verb: 'POST' });
const algorithm = histogramDelta(schedBefore, schedAfter, 'scheduler_scheduling_algorithm_duration_seconds');
const ext = (point: string): number => round(histogramDelta(schedBefore, schedAfter, 'scheduler_framework_extension_point_duration_seconds', { extension_point: point }).meanMs, 3);
const boundBy = `; its serial scheduling loop spent ${(100 * algorithm.sumSeconds / windowSeconds).toFixed(0)}% of the window in the scheduling algorithm (${algorithm.meanMs.toFixed(2)} ms per pod)`;
const details = {
  schedulingAlgorithmMeanMs: round(algorithm.meanMs, 3),
  /** Share of the bind window the serial scheduling loop spent in the algorithm (filter + score). */
  schedulingAlgorithmBusy: round(algorithm.sumSeconds / windowSeconds, 3),
  extensionPointMeanMs: { PreFilter: ext('PreFilter'), Filter: ext('Filter'), PreScore: ext('PreScore'), Score: ext('Score'), Reserve: ext('Reserve'), PreBind: ext('PreBind'), Bind: ext('Bind') },
  scheduleAttempts: promSum(schedAfter, 'scheduler_schedule_attempts_total') - promSum(schedBefore, 'scheduler_schedule_attempts_total'),
  scheduledAttempts: attempts.count,
  schedulingAttemptMeanMs: round(attempts.meanMs, 2),
  clientRateLimiterWaitMeanMs: round(limiter.meanMs, 3),
  clientRateLimiterWaitTotalSeconds: round(limiter.sumSeconds, 3),
  clientPostMeanMs: round(restLatency.meanMs, 1),
  qps: o.qps,
  burst: o.burst,
};
  return { boundBy, details };
}

/** The SITS scheduler's own counters over the window (from its stats replies). */
function sitsStats(sitsBase: Record<string, unknown>, sitsAfter: Record<string, unknown>, o: KubeBenchOptions): { requests: number; details: Record<string, unknown> } {
const cb = sitsBase.client as { requests: number; errors: number };
const ca = sitsAfter.client as { requests: number; errors: number };
const requests = ca.requests - cb.requests;
const sb = sitsBase.scheduler as Record<string, number>;
const sa = sitsAfter.scheduler as Record<string, number>;
const d: Record<string, number> = {};
for (const k of Object.keys(sa)) d[k] = (sa[k] ?? 0) - (sb[k] ?? 0);
const details = { ...d, clientErrors: ca.errors - cb.errors, maxInFlight: o.maxInFlight, profile: o.sitsProfile, rssMiB: sitsAfter.rssMiB, peakRssMiB: sitsAfter.peakRssMiB, heapUsedMiB: sitsAfter.heapUsedMiB, heapTotalMiB: sitsAfter.heapTotalMiB, externalMiB: sitsAfter.externalMiB, heapLimitMiB: sitsAfter.heapLimitMiB, logs: sitsAfter.logs };
  return { requests, details };
}

/** Nodes holding more GPU pods than they have GPUs (none may). */
function overcommitted(nodeOf: ReadonlyMap<string, string>, gpusPerNode: number): number {
  const perNode = new Map<string, number>();
  for (const n of nodeOf.values()) perNode.set(n, (perNode.get(n) ?? 0) + 1);
  return [...perNode.values()].filter((c) => c > gpusPerNode).length;
}

type CpuSample = ReturnType<CpuMeter['sample']>;
type SitsStatsReply = Record<string, unknown> | undefined;

/** What one run measured, raw: the watches, the instants, CPU samples, metrics scrapes and SITS's stats around the window. */
interface Measured {
  readonly o: KubeBenchOptions;
  readonly scheduler: SchedulerId;
  readonly runIndex: number;
  readonly tag: string;
  readonly watch: BindWatch;
  readonly events: ScheduledEventWatch;
  readonly probe: LatencyProbe;
  readonly createStart: ReadonlyMap<number, number>;
  readonly nodeObjects: ReturnType<typeof benchNodes>;
  readonly racks: number;
  /** Every pod bound before the timeout. */
  readonly all: boolean;
  readonly t0: number;
  readonly tCreated: number;
  readonly tEnd: number;
  readonly tEvents: number;
  readonly cpu0: CpuSample;
  readonly cpu1: CpuSample;
  readonly cpu2: CpuSample;
  readonly ranSits: boolean;
  readonly sitsBefore: SitsStatsReply;
  readonly sitsAtBind: SitsStatsReply;
  readonly sitsAfter: SitsStatsReply;
  readonly apiBefore: readonly Sample[];
  readonly apiAfter: readonly Sample[];
  readonly schedBefore: readonly Sample[];
  readonly schedAfter: readonly Sample[];
  readonly loadBefore: ReturnType<typeof loadAverage>;
  readonly loadAfter: ReturnType<typeof loadAverage>;
  readonly timeline: SchedulerRun['timeline'];
}

/** The run's result from its raw measurements; `log` gets the line about constraint violations. */
function runResult(m: Measured, log: (line: string) => void): SchedulerRun {
  const { o, scheduler, runIndex, tag, watch, events, probe, createStart, nodeObjects, racks, all, t0, tCreated, tEnd, tEvents, cpu0, cpu1, cpu2, sitsBefore, sitsAtBind, sitsAfter, apiBefore, apiAfter, schedBefore, schedAfter, loadBefore, loadAfter, timeline, ranSits } = m;
  const bindTimes = [...watch.boundAt.values()];
  const lastBind = Math.max(...bindTimes);
  const windowEnd = all ? lastBind : tEnd;
  const windowSeconds = (windowEnd - t0) / 1000;
  const ttb = timesToBind(o, watch.boundAt, createStart, t0);
  const tp = schedulerPerfThroughput(bindTimes, t0);
  const cpuWindow = withOther(diff(cpu0, cpu1));
  const cores = coresOver(cpuWindow, (tEnd - t0) / 1000);
  const cpuAll = withOther(diff(cpu0, cpu2));
  const coresAll = coresOver(cpuAll, (tEvents - t0) / 1000);
  const eventTimes = [...events.seenAt.values()];
  const allDone = Math.max(windowEnd, ...eventTimes);
  const zero = { eventLoop: { idleMs: 0, activeMs: 0 }, client: { requests: 0, errors: 0 }, scheduler: {} };
  const sitsBase = sitsBefore ?? (ranSits ? zero : undefined);
  const elu = sitsBase !== undefined && sitsAtBind !== undefined ? eventLoopUtilization(sitsBase, sitsAtBind) : undefined;
  const schedKey = scheduler === 'kube-scheduler' ? 'kube-scheduler' : 'sits';
  let boundBy = boundVerdict({
    windowSeconds: (tEnd - t0) / 1000,
    cores: cpus().length,
    scheduler: schedKey,
    shares: Object.entries(cpuWindow).map(([name, cpuSeconds]) => ({ name, cpuSeconds })),
    ...(elu === undefined ? {} : { eventLoopUtilization: elu }),
    schedulerSingleThreaded: scheduler === 'sits',
  });
  const { serverMeanMs, serverP99Ms, serverRequests } = apiServerStats(apiBefore, apiAfter);
  let schedulerRequests = Number.NaN;
  let schedulerDetails: Record<string, unknown> = {};
  if (scheduler === 'kube-scheduler') {
    schedulerRequests = promSum(schedAfter, 'rest_client_requests_total') - promSum(schedBefore, 'rest_client_requests_total');
    const k = kubeSchedulerStats(schedBefore, schedAfter, windowSeconds, o);
    boundBy += k.boundBy;
    schedulerDetails = k.details;
  } else if (sitsBase !== undefined && sitsAfter !== undefined) {
    const st = sitsStats(sitsBase, sitsAfter, o);
    schedulerRequests = st.requests;
    schedulerDetails = st.details;
  }
  // No node may hold more GPU pods than it has GPUs.
  const overcommittedNodes = overcommitted(watch.nodeOf, gpusPerNode(o.shape));
  const violations = o.mix === 'constraints' ? constraintViolations(watch.nodeOf, nodeObjects, racks, o.pods, podName) : 0;
  if (violations > 0) log(`${tag} ${violations} pods bound against their node affinity or an untolerated taint`);
  return {
    scheduler,
    run: runIndex + 1,
    mode: o.mode,
    podsPerSecond: round(tp?.average ?? Number.NaN),
    throughput: tp === undefined ? null : { average: round(tp.average), perc50: round(tp.perc50), perc90: round(tp.perc90), perc95: round(tp.perc95), perc99: round(tp.perc99), samples: tp.samples },
    overallPodsPerSecond: round(rate(watch.boundAt.size, t0, windowEnd)),
    withEvents: {
      scheduledEvents: events.seenAt.size,
      seconds: round((allDone - t0) / 1000, 2),
      podsPerSecond: round(rate(Math.min(watch.boundAt.size, events.seenAt.size), t0, allDone)),
      cpuSeconds: Object.fromEntries(Object.entries(cpuAll).map(([k, v]) => [k, round(v, 2)])),
      cpuCores: coresAll,
    },
    createPodsPerSecond: round(rate(o.pods, t0, tCreated)),
    windowSeconds: round(windowSeconds, 2),
    createSeconds: round((tCreated - t0) / 1000, 2),
    bound: watch.boundAt.size,
    timeToBindMs: latency(ttb),
    cpuSeconds: Object.fromEntries(Object.entries(cpuWindow).map(([k, v]) => [k, round(v, 2)])),
    cpuCores: cores,
    cpuMsPerPod: Object.fromEntries(Object.entries(cpuAll).filter(([k]) => k !== 'other').map(([k, v]) => [k, round((v * 1000) / Math.max(1, watch.boundAt.size), 2)])),
    ...(elu === undefined ? {} : { eventLoopUtilization: round(elu, 3) }),
    boundBy,
    api: { probeWriteMs: latency(probe.writeMs), probeWatchLagMs: latency(probe.watchMs), probeGetMs: latency(probe.getMs), serverMeanMs, serverP99Ms, serverRequests },
    schedulerRequests,
    schedulerDetails,
    overcommittedNodes,
    constraintViolations: violations,
    loadAverage: { before: loadBefore, after: loadAfter },
    timeline,
  };
}
