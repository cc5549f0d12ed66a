/**
 * The node agent's watch of its own Node's GPU quarantine (ANNOTATION.gpuQuarantine, ADR 0096): whoever wrote it
 * (the health monitor in this agent, a cluster-wide one, the BatchInferenceJob fault ladder), the device plugin
 * learns it here and reports those GPUs Unhealthy to the kubelet (docs/adr/0128-device-plugin-reports-quarantine.md).
 * One list-and-watch narrowed to the node by a field selector; a malformed annotation is logged and the last good
 * quarantine kept (the scheduler refuses the node's GPUs then anyway: kube/cache/labels.ts).
 */
import type { V1Node } from '@kubernetes/client-node';
import { ANNOTATION } from '../api/wire.ts';
import { parseQuarantine, quarantineText } from '../core/health/quarantine.ts';
import type { KubeClient } from '../kube/client/client.ts';
import { Reflector } from '../kube/client/reflector.ts';

/** GPU index → the quarantine's text (`quarantined until …: reason`), from the annotation's value. */
export function quarantinedGpus(
  node: string,
  value: string | undefined,
): { readonly ok: true; readonly value: ReadonlyMap<number, string> } | { readonly ok: false; readonly error: string } {
  if (value === undefined) return { ok: true, value: new Map() };
  const q = parseQuarantine(node, value);
  if (!q.ok) return q;
  return { ok: true, value: new Map(q.value.map((e) => [e.gpu, quarantineText(e)])) };
}

export class NodeQuarantineWatch {
  private readonly reflector: Reflector<V1Node>;
  private lastError = '';
  private stopped = false;
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    client: KubeClient,
    private readonly nodeName: string,
    private readonly onChange: (quarantined: ReadonlyMap<number, string>) => void,
    private readonly log: (line: string) => void,
  ) {
    const seen = (n: V1Node): void => this.seen(n);
    this.reflector = new Reflector<V1Node>(
      client,
      '/api/v1/nodes',
      { add: seen, update: seen, delete: () => onChange(new Map()), error: (e) => this.problem(`watching node ${nodeName}: ${e.message}`) },
      { fieldSelector: `metadata.name=${nodeName}` },
    );
  }

  /**
   * Lists the node once (resolves when applied), then watches it. A first list that fails (no RBAC yet, the
   * apiserver away) is logged and tried again every `retryMs`; it never stops the agent.
   */
  async start(retryMs = 10_000): Promise<void> {
    try {
      await this.reflector.start();
    } catch (e) {
      this.problem(
        `node ${this.nodeName}: reading its GPU quarantine: ${(e as Error).message}; quarantined GPUs are not reported Unhealthy to the kubelet until it works (retrying)`,
      );
      if (!this.stopped) this.timer = setTimeout(() => void this.start(retryMs), retryMs);
    }
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.reflector.stop();
  }

  private seen(n: V1Node): void {
    const q = quarantinedGpus(this.nodeName, n.metadata?.annotations?.[ANNOTATION.gpuQuarantine]);
    if (!q.ok) {
      this.problem(`node ${this.nodeName}: annotation ${ANNOTATION.gpuQuarantine}: ${q.error}; the device plugin keeps the last good quarantine`);
      return;
    }
    this.lastError = '';
    this.onChange(q.value);
  }

  /** Logs a problem once until it changes (a watch that keeps failing would otherwise log every retry). */
  private problem(e: string): void {
    if (e !== this.lastError) this.log(e);
    this.lastError = e;
  }
}
