/**
 * List-then-watch of one resource into handlers, the way client-go's reflector does it: a full list
 * replaces the known set (synthesising deletes for objects that vanished while we were away), the watch
 * resumes from the last resourceVersion, `410 Gone` forces a relist, any other error or a dropped stream
 * backs off (0.5 s doubling to 30 s) and resumes. Handlers see a consistent add/update/delete stream.
 */
import { KubeApiError, type KubeClient, type WatchHandle } from './client.ts';

export interface KubeObject {
  readonly metadata?: { readonly name?: string; readonly namespace?: string; readonly uid?: string; readonly resourceVersion?: string };
}

export interface ReflectorHandlers<T> {
  /** Applied to every listed or watched object before it is kept or handed to the handlers (see `Transform`). */
  transform?: Transform<T>;
  add(obj: T): void;
  update(obj: T, old: T): void;
  delete(obj: T): void;
  /** After each (re)list has been applied. */
  synced?(): void;
  /** Every error, for logs and metrics. */
  error?(err: Error): void;
}

interface ListResponse<T> {
  readonly metadata?: { readonly resourceVersion?: string; readonly continue?: string };
  readonly items: T[];
}

/**
 * A reflector's transform (client-go's `TransformFunc`): every listed or watched object passes through it before it
 * is kept or handed on, so that a long-lived cache holds only what its reader needs.
 */
export type Transform<T> = (obj: T) => T;

/**
 * Drops `metadata.managedFields` (server-side apply's field ownership, about half of a pod's parsed size), in place:
 * no reader of a watch cache uses it, and kube-scheduler's informers strip it the same way.
 */
export function stripManagedFields<T extends KubeObject>(obj: T): T {
  const meta = obj.metadata as { managedFields?: unknown } | undefined;
  if (meta?.managedFields === undefined) return obj;
  // A copy without it, not `delete`: deleting a property turns V8's object into a dictionary, twice its size.
  const { managedFields: _dropped, ...rest } = meta;
  (obj as { metadata?: unknown }).metadata = rest;
  return obj;
}

export const objectKey = (o: KubeObject): string =>
  o.metadata?.namespace === undefined || o.metadata.namespace === '' ? (o.metadata?.name ?? '') : `${o.metadata.namespace}/${o.metadata.name ?? ''}`;

export class Reflector<T extends KubeObject> {
  private readonly known = new Map<string, T>();
  private rv = '';
  private handle: WatchHandle | undefined;
  private stopped = false;
  private backoffMs = 500;
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** Relists done (the first list included). */
  relists = 0;

  constructor(
    private readonly client: KubeClient,
    readonly path: string,
    private readonly handlers: ReflectorHandlers<T>,
    private readonly query: Readonly<Record<string, string>> = {},
  ) {}

  private transform(obj: T): T {
    return this.handlers.transform === undefined ? obj : this.handlers.transform(obj);
  }

  get items(): ReadonlyMap<string, T> {
    return this.known;
  }

  /** Lists once (resolving when the first list is applied), then keeps watching in the background. */
  async start(): Promise<void> {
    await this.relist();
    this.watch();
  }

  stop(): void {
    this.stopped = true;
    this.handle?.stop();
    if (this.timer !== undefined) clearTimeout(this.timer);
  }

  private async relist(): Promise<void> {
    const fresh = new Map<string, T>();
    let cont: string | undefined;
    let rv = '';
    do {
      const page: ListResponse<T> = await this.client.get<ListResponse<T>>(this.path, {
        ...this.query,
        limit: 2000,
        ...(cont === undefined ? {} : { continue: cont }),
      });
      for (const item of page.items) fresh.set(objectKey(item), this.transform(item));
      cont = page.metadata?.continue === '' ? undefined : page.metadata?.continue;
      rv = page.metadata?.resourceVersion ?? rv;
    } while (cont !== undefined);
    this.relists++;
    for (const [k, old] of this.known) {
      if (!fresh.has(k)) {
        this.known.delete(k);
        this.handlers.delete(old);
      }
    }
    for (const [k, obj] of fresh) {
      const old = this.known.get(k);
      this.known.set(k, obj);
      if (old === undefined) this.handlers.add(obj);
      else if (old.metadata?.resourceVersion !== obj.metadata?.resourceVersion) this.handlers.update(obj, old);
    }
    this.rv = rv;
    this.handlers.synced?.();
  }

  private watch(): void {
    if (this.stopped) return;
    let sawEvent = false;
    const startedMs = performance.now();
    void this.client
      .watch<T & { code?: number }>(
        this.path,
        { ...this.query, resourceVersion: this.rv, timeoutSeconds: 300 },
        (ev) => {
          // The first event proves the watch works: later failures start again from the shortest backoff.
          if (!sawEvent && ev.type !== 'ERROR') this.backoffMs = 500;
          sawEvent = true;
          if (ev.type === 'ERROR') {
            const code = (ev.object as { code?: number }).code;
            this.handle?.stop();
            this.retry(code === 410 ? 'relist' : 'watch', new KubeApiError(code ?? 0, 'WatchError', JSON.stringify(ev.object), 'WATCH', this.path));
            return;
          }
          const rv = ev.object.metadata?.resourceVersion;
          if (rv !== undefined) this.rv = rv;
          if (ev.type === 'BOOKMARK') return;
          const obj = this.transform(ev.object);
          const k = objectKey(obj);
          const old = this.known.get(k);
          if (ev.type === 'DELETED') {
            this.known.delete(k);
            this.handlers.delete(old ?? obj);
          } else {
            this.known.set(k, obj);
            if (old === undefined) this.handlers.add(obj);
            else this.handlers.update(obj, old);
          }
        },
        (err) => {
          if (this.stopped) return;
          if (err === undefined) {
            // A clean close (server timeout): resume at once from the last resourceVersion — unless it closed
            // within a second with nothing in it (a server or proxy refusing watches): that backs off, as
            // client-go's "very short watch" does, instead of spinning.
            if (!sawEvent && performance.now() - startedMs < 1000) {
              const delay = this.backoffMs;
              this.backoffMs = Math.min(this.backoffMs * 2, 30_000);
              this.retry('watch', undefined, delay);
            } else this.retry('watch', undefined, 0);
            return;
          }
          this.retry(err instanceof KubeApiError && err.status === 410 ? 'relist' : 'watch', err);
        },
      )
      .then((h) => {
        this.handle = h;
        if (this.stopped) h.stop();
      })
      .catch((e: unknown) => this.retry('watch', e as Error));
  }

  private retry(kind: 'relist' | 'watch', err: Error | undefined, delayMs = this.backoffMs): void {
    if (this.stopped) return;
    if (err !== undefined) {
      this.handlers.error?.(err);
      this.backoffMs = Math.min(this.backoffMs * 2, 30_000);
    }
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        if (kind === 'watch') {
          this.watch();
          return;
        }
        this.relist()
          .then(() => {
            this.backoffMs = 500;
            this.watch();
          })
          .catch((e: unknown) => this.retry('relist', e as Error));
      },
      kind === 'relist' && err instanceof KubeApiError && err.status === 410 ? 0 : delayMs,
    );
  }
}
