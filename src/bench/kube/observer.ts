/**
 * The benchmark's own eyes on the API server, the same for both schedulers: a watch on the benchmark
 * namespace that records when each pod is first seen with `spec.nodeName` set, and a probe that measures API
 * write latency and how long a write takes to come back through a watch (watch lag) while the scheduler runs.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { KubeClient } from '../../kube/client/client.ts';
import { Reflector } from '../../kube/client/reflector.ts';

export class BindWatch {
  /** Pod name → time (performance.now) the watch first showed it bound. */
  readonly boundAt = new Map<string, number>();
  /** Pod name → node. */
  readonly nodeOf = new Map<string, string>();
  /** Pod name → time the watch first showed the pod (created). */
  readonly seenAt = new Map<string, number>();
  events = 0;
  private readonly reflector: Reflector<V1Pod>;
  private waiters: { count: number; resolve: () => void }[] = [];
  errors: string[] = [];

  constructor(client: KubeClient, namespace: string, private readonly onBound?: (name: string, count: number) => void) {
    const see = (p: V1Pod): void => {
      this.events++;
      const name = p.metadata?.name ?? '';
      const now = performance.now();
      if (!this.seenAt.has(name)) this.seenAt.set(name, now);
      const node = p.spec?.nodeName ?? '';
      if (node !== '' && !this.boundAt.has(name)) {
        this.boundAt.set(name, now);
        this.nodeOf.set(name, node);
        this.onBound?.(name, this.boundAt.size);
        if (this.waiters.length > 0) {
          const ready = this.waiters.filter((w) => this.boundAt.size >= w.count);
          this.waiters = this.waiters.filter((w) => this.boundAt.size < w.count);
          for (const w of ready) w.resolve();
        }
      }
    };
    this.reflector = new Reflector<V1Pod>(client, `/api/v1/namespaces/${namespace}/pods`, {
      add: see,
      update: see,
      delete: () => undefined,
      error: (e) => this.errors.push(e.message),
    });
  }

  start(): Promise<void> {
    return this.reflector.start();
  }

  stop(): void {
    this.reflector.stop();
  }

  /** Resolves true once `count` pods were seen bound, false after `timeoutMs`. */
  waitBound(count: number, timeoutMs: number): Promise<boolean> {
    if (this.boundAt.size >= count) return Promise.resolve(true);
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== entry);
        resolve(false);
      }, timeoutMs);
      const entry = {
        count,
        resolve: () => {
          clearTimeout(t);
          resolve(true);
        },
      };
      this.waiters.push(entry);
    });
  }
}

interface ConfigMap {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
  data?: Record<string, string>;
}

/**
 * Every `everyMs`, writes a sequence number into a ConfigMap and records (1) the write's latency and (2) the
 * time until a watch delivers it (write → watch event), i.e. the delay any watcher sees under this load.
 */
export class LatencyProbe {
  readonly writeMs: number[] = [];
  readonly watchMs: number[] = [];
  readonly getMs: number[] = [];
  private readonly sentAt = new Map<number, number>();
  private seq = 0;
  private timer: ReturnType<typeof setInterval> | undefined;
  private readonly reflector: Reflector<ConfigMap>;
  private readonly path: string;
  private busy = false;

  constructor(
    private readonly client: KubeClient,
    private readonly namespace: string,
    private readonly name = 'sits-bench-probe',
    private readonly everyMs = 250,
  ) {
    this.path = `/api/v1/namespaces/${namespace}/configmaps/${name}`;
    const see = (cm: ConfigMap): void => {
      const n = Number(cm.data?.seq ?? 'NaN');
      const t0 = this.sentAt.get(n);
      if (t0 === undefined) return;
      this.sentAt.delete(n);
      this.watchMs.push(performance.now() - t0);
    };
    this.reflector = new Reflector<ConfigMap>(client, `/api/v1/namespaces/${namespace}/configmaps`, { add: see, update: see, delete: () => undefined }, { fieldSelector: `metadata.name=${name}` });
  }

  async start(): Promise<void> {
    try {
      await this.client.post(`/api/v1/namespaces/${this.namespace}/configmaps`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: this.name, namespace: this.namespace }, data: { seq: '-1' } });
    } catch {
      // exists already
    }
    await this.reflector.start();
  }

  /** Starts probing (call at the beginning of the measured window). */
  run(): void {
    this.timer = setInterval(() => void this.once(), this.everyMs);
  }

  private async once(): Promise<void> {
    if (this.busy) return; // a slow write must not pile probes up
    this.busy = true;
    try {
      const n = this.seq++;
      const t0 = performance.now();
      this.sentAt.set(n, t0);
      await this.client.mergePatch(this.path, { data: { seq: String(n) } });
      this.writeMs.push(performance.now() - t0);
      const t1 = performance.now();
      await this.client.get(this.path);
      this.getMs.push(performance.now() - t1);
    } catch {
      // counted as missing samples
    } finally {
      this.busy = false;
    }
  }

  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.reflector.stop();
  }
}

interface CoreEvent {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
  reason?: string;
  involvedObject?: { name?: string; kind?: string };
}

/**
 * Watches the namespace's events (core/v1 view, which also shows kube-scheduler's events.k8s.io/v1 events)
 * and records when the `Scheduled` event of each pod was first seen: binding is done when the watch shows
 * `spec.nodeName`, but a scheduler that queues its events behind its bindings still owes that work.
 */
export class ScheduledEventWatch {
  /** Pod name → time its Scheduled event was first seen. */
  readonly seenAt = new Map<string, number>();
  private readonly reflector: Reflector<CoreEvent>;

  constructor(client: KubeClient, namespace: string) {
    const see = (e: CoreEvent): void => {
      if (e.reason !== 'Scheduled' || e.involvedObject?.kind !== 'Pod') return;
      const name = e.involvedObject.name ?? '';
      if (!this.seenAt.has(name)) this.seenAt.set(name, performance.now());
    };
    this.reflector = new Reflector<CoreEvent>(client, `/api/v1/namespaces/${namespace}/events`, { add: see, update: see, delete: () => undefined });
  }

  start(): Promise<void> {
    return this.reflector.start();
  }

  stop(): void {
    this.reflector.stop();
  }

  /** Resolves true once `count` pods have their Scheduled event, false after `timeoutMs` without progress. */
  async waitCount(count: number, stallMs: number): Promise<boolean> {
    let last = this.seenAt.size;
    let lastChange = performance.now();
    while (this.seenAt.size < count) {
      await new Promise((r) => setTimeout(r, 100));
      if (this.seenAt.size !== last) {
        last = this.seenAt.size;
        lastChange = performance.now();
      } else if (performance.now() - lastChange > stallMs) return false;
    }
    return true;
  }
}
