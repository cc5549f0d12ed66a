/**
 * The SITS scheduler as its own process for `sits bench kube` (so that its CPU is measured apart from the
 * benchmark's pod creator and watch, as kube-scheduler's is): the same composition as `sits run`
 * (createLiveApp), configured by one JSON argument. Protocol on stdio, one JSON object per line:
 * stdout `{"type":"ready",...}` once started; stdin `stats` → stdout `{"type":"stats",...}`; stdin `stop` (or
 * EOF) → stops the scheduler and exits 0 (so that `--cpu-prof` writes its profile); stdin `heap FILE` → writes a V8
 * heap snapshot there, then stdout `{"type":"heap","file":FILE}` (what holds the memory at the end of a run).
 */
import { createInterface } from 'node:readline';
import { performance } from 'node:perf_hooks';
import { writeHeapSnapshot } from 'node:v8';
import { createLiveApp } from '../../app/live.ts';

export interface SitsChildConfig {
  readonly kubeconfig: string;
  readonly maxInFlight: number;
  readonly events: boolean;
  readonly profile: string;
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

/** Where the process's memory is (MiB): resident now and at its peak, the V8 heap, and buffers outside it. */
function memoryMiB(): Record<string, number> {
  const m = process.memoryUsage();
  const mib = (b: number): number => Math.round(b / 2 ** 20);
  // resourceUsage().maxRSS is in KiB.
  return { rssMiB: mib(m.rss), peakRssMiB: Math.round(process.resourceUsage().maxRSS / 1024), heapUsedMiB: mib(m.heapUsed), heapTotalMiB: mib(m.heapTotal), externalMiB: mib(m.external) };
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
    } else if (cmd.startsWith('heap ')) {
      const file = writeHeapSnapshot(cmd.slice('heap '.length));
      write({ type: 'heap', file });
    } else if (cmd === 'stop') void stop();
  })
  .on('close', () => void stop());
