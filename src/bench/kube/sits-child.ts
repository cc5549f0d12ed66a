/**
 * The SITS scheduler as its own process for `sits bench kube` (so that its CPU is measured apart from the
 * benchmark's pod creator and watch, as kube-scheduler's is): the same composition as `sits run`
 * (createLiveApp), configured by one JSON argument. Protocol on stdio, one JSON object per line:
 * stdout `{"type":"ready",...}` once started; stdin `stats` → stdout `{"type":"stats",...}`; stdin `sample` →
 * stdout `{"type":"sample",...}` (memory, event-loop delay since the last sample, the scheduler's footprint: for
 * `sits bench soak`); stdin `heap FILE` → writes a V8 heap snapshot there, then stdout `{"type":"heap","file":FILE}`
 * (what holds the memory at the end of a run); stdin `stop` (or EOF) → stops the scheduler and exits 0 (so that
 * `--cpu-prof` writes its profile). A bench-only channel: no port is opened.
 */
import { createInterface } from 'node:readline';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { getHeapStatistics, writeHeapSnapshot } from 'node:v8';
import { createLiveApp } from '../../app/live.ts';

export interface SitsChildConfig {
  readonly kubeconfig: string;
  readonly maxInFlight: number;
  readonly events: boolean;
  readonly profile: string;
  /** A full collection before each `sample` (the child runs with --expose-gc): heap used is then the live heap. */
  readonly gcBeforeSample?: boolean;
  /** For the spawner (SitsProcess): V8's --max-old-space-size of this process; absent: V8's default for the host. */
  readonly maxOldSpaceMiB?: number;
}

const cfg = JSON.parse(process.argv[2] ?? '{}') as SitsChildConfig;
const write = (o: unknown): void => void process.stdout.write(`${JSON.stringify(o)}\n`);
const logs: string[] = [];
const app = await createLiveApp({
  kubeconfig: cfg.kubeconfig,
  identity: 'sits-bench',
  maxInFlight: cfg.maxInFlight,
  events: cfg.events,
  profile: cfg.profile,
  log: (m) => {
    if (logs.length < 50) logs.push(m);
  },
});
write({ type: 'ready', nodes: app.scheduler.cache.nodeCount, pid: process.pid });

// Event-loop delay between two `sample` requests (10 ms resolution: the timer's own jitter stays below it).
const delay = monitorEventLoopDelay({ resolution: 10 });
delay.enable();
const ms = (ns: number): number => Math.round(ns / 1e4) / 100;
/**
 * Where the process's memory is (MiB): resident now and at its peak, the V8 heap, buffers outside it, and the heap
 * limit V8 runs with (the bench's record that the child ran under the cap a container gets: heap-cap.ts).
 */
// One reader for `stats` and `sample` (they used to round differently); 0.1 MiB keeps a soak's slow slopes visible.
function memoryMiB(): Record<string, number> {
  const m = process.memoryUsage();
  const mib = (b: number): number => Math.round((10 * b) / 2 ** 20) / 10;
  // resourceUsage().maxRSS is in KiB.
  return { rssMiB: mib(m.rss), peakRssMiB: mib(process.resourceUsage().maxRSS * 1024), heapUsedMiB: mib(m.heapUsed), heapTotalMiB: mib(m.heapTotal), externalMiB: mib(m.external), heapLimitMiB: mib(getHeapStatistics().heap_size_limit) };
}

let stopping = false;
const stop = async (): Promise<void> => {
  if (stopping) return;
  stopping = true;
  await app.stop();
  process.exit(0);
};
createInterface({ input: process.stdin })
  .on('line', (l) => {
    const cmd = l.trim();
    if (cmd === 'stats') {
      const elu = performance.eventLoopUtilization();
      const cpu = process.cpuUsage();
      write({
        type: 'stats',
        scheduler: app.scheduler.stats,
        client: app.client.stats,
        pending: app.scheduler.cache.pending.size,
        eventLoop: { idleMs: elu.idle, activeMs: elu.active },
        cpuSeconds: (cpu.user + cpu.system) / 1e6,
        ...memoryMiB(),
        logs,
      });
    } else if (cmd === 'sample') {
      const lag = { p50Ms: ms(delay.percentile(50)), p99Ms: ms(delay.percentile(99)), maxMs: ms(delay.max), meanMs: ms(delay.mean), count: delay.count };
      if (cfg.gcBeforeSample === true) (globalThis as { gc?: () => void }).gc?.();
      const cpu = process.cpuUsage();
      // After the collection: its pause is the bench's, not the scheduler's lag.
      delay.reset();
      write({
        type: 'sample',
        ...memoryMiB(),
        lag,
        cpuSeconds: (cpu.user + cpu.system) / 1e6,
        scheduler: app.scheduler.stats,
        footprint: app.scheduler.footprint(),
      });
    } else if (cmd.startsWith('heap ')) {
      const file = writeHeapSnapshot(cmd.slice('heap '.length));
      write({ type: 'heap', file });
    } else if (cmd === 'stop') void stop();
  })
  .on('close', () => void stop());
