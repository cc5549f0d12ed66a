/**
 * What the live adapters share: requests started in the background (kube-scheduler's binding cycle, events,
 * status writes) tracked so that a host can wait for them, and the API path of a pod by its key.
 */
export class InFlight {
  private readonly tasks = new Set<Promise<unknown>>();

  /** Tracks a request until it settles (its own error handling stays the caller's). */
  track(p: Promise<unknown>): void {
    this.tasks.add(p);
    void p.finally(() => this.tasks.delete(p)).catch(() => undefined);
  }

  get size(): number {
    return this.tasks.size;
  }

  /** Resolves when every request tracked so far, and any tracked meanwhile, has settled. */
  async drain(): Promise<void> {
    while (this.tasks.size > 0) await Promise.allSettled([...this.tasks]);
  }
}

/** `namespace/name` → [namespace, name]. */
export function splitKey(key: string): [string, string] {
  const i = key.indexOf('/');
  return [key.slice(0, i), key.slice(i + 1)];
}

export function podPath(key: string): string {
  const [ns, name] = splitKey(key);
  return `/api/v1/namespaces/${ns}/pods/${name}`;
}

/**
 * The pod's status subresource: where the scheduler writes what it records on a pod (conditions, and annotations
 * by merge patch: the apiserver keeps the spec), as kube-scheduler holds pods/status patch and no pods patch.
 */
export function podStatusPath(key: string): string {
  return `${podPath(key)}/status`;
}
