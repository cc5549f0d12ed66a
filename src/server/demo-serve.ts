/**
 * `sits demo --serve`: the demo workload (the one `npm start` compares) replayed under SITS on the embedded
 * cluster in accelerated virtual time, with the dashboard on loopback showing the cluster fill up. Queues give
 * the tables something to say: training, inference and notebooks share the cluster in one cohort (nominal
 * quotas by weight, borrowing allowed), so jobs wait for quota, capacity and reservations as they would live.
 */
import { makeQueue, type QueueSpec } from '../core/queue/model.ts';
import { seededRng } from '../core/ports.ts';
import { demoCluster, demoWorkload } from '../app/demo-cluster.ts';
import { startServer, type SitsServer } from './server.ts';
import { SimFeed, type FeedJob } from './sim-feed.ts';
import type { ReplayView } from './cluster-view.ts';
import { DASHBOARD_PATHS } from './dashboard.ts';
import { ClusterViewStream } from './view-stream.ts';

export interface DemoServeOptions {
  readonly seed: number;
  readonly hours: number;
  readonly load: number;
  /** Virtual seconds per wall-clock second. */
  readonly speed: number;
  readonly port: number;
  readonly host?: string;
  /** Start over when the replay ends (default: stop there; the page offers a restart). */
  readonly loop?: boolean;
  readonly log?: (m: string) => void;
}

export interface DemoServe {
  readonly url: string;
  /** The current run's feed (a restart makes a new one). */
  readonly feed: SimFeed;
  readonly server: SitsServer;
  /** Resolves when the first run of the replay has ended (with `loop`, it starts over then). */
  readonly done: Promise<void>;
  /** Starts the replay over from virtual time 0 (the page's restart button; `loop` at the end). */
  restart(): void;
  close(): Promise<void>;
}

const TICK_MS = 100;

/** The demo's queues: shares of the cluster's GPUs by weight, all in one cohort so that idle quota is lent. */
export function demoQueues(totalGpus: number): Map<string, QueueSpec> {
  const split: readonly [string, number][] = [
    ['training', 0.6],
    ['inference', 0.25],
    ['notebooks', 0.15],
  ];
  return new Map(
    split.map(([name, share]) => [
      name,
      makeQueue(name, {
        cohort: 'demo',
        weight: share * 20,
        nominal: { gpuMilli: Math.round(totalGpus * share) * 1000, cpuMilli: Infinity, memoryMiB: Infinity },
      }),
    ]),
  );
}

export function demoFeedJobs(seed: number, hours: number, load: number): FeedJob[] {
  return demoWorkload(seededRng(seed), { hours, load }).map((j) => ({
    id: j.id,
    arrivalMs: j.arrivalMs,
    durationMs: j.durationMs,
    gang:
      j.unit.kind === 'gang'
        ? j.unit.gang
        : { name: j.unit.pod.id, minMember: 1, members: [j.unit.pod], topology: {}, priority: j.unit.pod.priority, queue: j.unit.pod.queue },
  }));
}

export async function serveDemo(o: DemoServeOptions): Promise<DemoServe> {
  const nodes = demoCluster();
  const jobs = demoFeedJobs(o.seed, o.hours, o.load);
  const queues = demoQueues(nodes.reduce((s, n) => s + n.gpus.length, 0));
  // The same seed every run: a restart shows the same replay again.
  const newFeed = (): SimFeed => new SimFeed({ nodes, jobs, queues, seed: o.seed, etaEveryMs: 5 * 60_000 });
  const endMs = o.hours * 3_600_000 * 1.25;
  let feed = newFeed();
  let run = 1;
  let ended = false;
  let t0 = Date.now();
  const replay = (): ReplayView => ({
    state: ended ? 'ended' : 'running',
    endMs,
    loop: o.loop === true,
    run,
    restartPath: DASHBOARD_PATHS.restart.slice(DASHBOARD_PATHS.page.length),
  });
  const stream = new ClusterViewStream(() => ({ ...feed.input(), replay: replay() }), {
    minIntervalMs: TICK_MS,
    ...(o.log === undefined ? {} : { log: o.log }),
  });
  let finish: () => void = () => undefined;
  const done = new Promise<void>((r) => (finish = r));
  let timer: ReturnType<typeof setInterval> | undefined;
  const tick = (): void => {
    const target = Math.min(endMs, (Date.now() - t0) * o.speed);
    try {
      feed.advanceTo(target);
    } catch (e) {
      o.log?.(`demo replay: ${(e as Error).stack ?? String(e)}`);
    }
    if (target >= endMs) {
      ended = true;
      clearInterval(timer);
      timer = undefined;
      finish();
      if (o.loop === true) {
        o.log?.(`demo replay: run ${run} ended at t+${Math.round(endMs / 1000)} s; starting over (--loop)`);
        restart();
        return;
      }
    }
    stream.changed();
  };
  const restart = (): void => {
    if (timer !== undefined) clearInterval(timer);
    feed = newFeed();
    run++;
    ended = false;
    t0 = Date.now();
    timer = setInterval(tick, TICK_MS);
    stream.changed();
  };
  // Loopback only: plain HTTP is allowed there (secure-server refuses it elsewhere).
  const server = await startServer({
    port: o.port,
    host: o.host ?? '127.0.0.1',
    view: stream,
    replay: { restart },
    ...(o.log === undefined ? {} : { log: o.log }),
  });
  timer = setInterval(tick, TICK_MS);
  return {
    url: `${server.url}/dashboard/`,
    get feed() {
      return feed;
    },
    server,
    done,
    restart,
    close: async () => {
      if (timer !== undefined) clearInterval(timer);
      timer = undefined;
      finish();
      await server.close();
    },
  };
}
