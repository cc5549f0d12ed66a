/**
 * A keyed work queue as controllers use it (client-go's workqueue): a key is processed by one worker at a time;
 * a key added while it is being processed is processed again right after; `addAfter` keeps the earliest timer
 * per key. Keys are processed in the order they were added.
 */
export class WorkQueue {
  private readonly queue: string[] = [];
  private readonly queued = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly dirty = new Set<string>();
  private readonly timers = new Map<string, { at: number; timer: ReturnType<typeof setTimeout> }>();
  private readonly running = new Set<Promise<void>>();
  /** When each queued key was added (performance.now()), for the observer's queue wait. */
  private readonly addedAt = new Map<string, number>();
  private stopped = false;

  constructor(
    private readonly worker: (key: string) => Promise<void>,
    private readonly concurrency = 4,
    private readonly onError: (key: string, e: unknown) => void = () => undefined,
    /** Metrics hooks (kube/controllers/controller-metrics.ts): every add, and each key's wait once a worker takes it. */
    private readonly observer?: { added(): void; started(seconds: number): void },
  ) {}

  add(key: string): void {
    if (this.stopped) return;
    this.observer?.added();
    if (this.processing.has(key)) {
      this.dirty.add(key);
      return;
    }
    if (this.queued.has(key)) return;
    this.queued.add(key);
    this.queue.push(key);
    if (this.observer !== undefined) this.addedAt.set(key, performance.now());
    this.pump();
  }

  /** Adds the key after `ms` (an earlier pending timer for the key wins). */
  addAfter(key: string, ms: number): void {
    if (this.stopped) return;
    const at = performance.now() + Math.max(0, ms);
    const t = this.timers.get(key);
    if (t !== undefined && t.at <= at) return;
    if (t !== undefined) clearTimeout(t.timer);
    const timer = setTimeout(
      () => {
        this.timers.delete(key);
        this.add(key);
      },
      Math.max(0, ms),
    );
    this.timers.set(key, { at, timer });
  }

  get size(): number {
    return this.queue.length + this.processing.size;
  }

  /** Keys waiting for a worker (client-go's workqueue depth: neither those in flight nor those on a timer). */
  get depth(): number {
    return this.queue.length;
  }

  /** Stops taking work and waits for the workers in flight. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.timers.values()) clearTimeout(t.timer);
    this.timers.clear();
    this.queue.length = 0;
    this.queued.clear();
    this.addedAt.clear();
    await Promise.allSettled([...this.running]);
  }

  private pump(): void {
    while (!this.stopped && this.processing.size < this.concurrency && this.queue.length > 0) {
      const key = this.queue.shift() as string;
      this.queued.delete(key);
      const at = this.addedAt.get(key);
      if (at !== undefined) {
        this.addedAt.delete(key);
        this.observer?.started((performance.now() - at) / 1000);
      }
      this.processing.add(key);
      const run = this.worker(key)
        .catch((e: unknown) => this.onError(key, e))
        .finally(() => {
          this.processing.delete(key);
          this.running.delete(run);
          if (this.dirty.delete(key)) this.add(key);
          this.pump();
        });
      this.running.add(run);
    }
  }
}
