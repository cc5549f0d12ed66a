/**
 * Dev mode only — the node-status half of a kubelet for fake nodes, as far as the upstream e2e scheduling suite
 * reads it: an InternalIP address (the host-port cases bind to it), `ephemeral-storage` capacity, and allocatable
 * following capacity for extended resources a test adds to capacity only (a kubelet recomputes allocatable from
 * capacity on its next status update; the pod-overhead case relies on it).
 */
import type { V1Node } from '@kubernetes/client-node';
import type { KubeClient } from '../kube/client/client.ts';
import { Reflector } from '../kube/client/reflector.ts';

export interface FakeNodeStatusOptions {
  /** ephemeral-storage capacity of every node (a kubelet reports its image filesystem). */
  readonly ephemeralStorage: string;
  readonly log?: (m: string) => void;
}

/** Resources a kubelet computes itself: never copied from capacity to allocatable by this emulation. */
const KUBELET_OWNED = new Set(['cpu', 'memory', 'pods', 'ephemeral-storage']);

/** The allocatable entries a kubelet would add: capacity entries missing from allocatable (extended resources only). */
export function missingAllocatable(node: V1Node): Record<string, string> {
  const cap = node.status?.capacity ?? {};
  const alloc = node.status?.allocatable ?? {};
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(cap)) if (!KUBELET_OWNED.has(k) && alloc[k] === undefined) out[k] = v;
  return out;
}

export class FakeNodeStatus {
  private reflector: Reflector<V1Node> | undefined;

  constructor(
    private readonly client: KubeClient,
    private readonly nodeNames: readonly string[],
    private readonly opts: FakeNodeStatusOptions,
  ) {}

  /** Writes the addresses and ephemeral storage of every node, then keeps allocatable following capacity. */
  async start(): Promise<void> {
    for (const [i, name] of this.nodeNames.entries()) {
      const ip = `10.254.${(i >> 8) & 255}.${(i & 255) + 1}`;
      await this.client.request('PATCH', `/api/v1/nodes/${name}/status`, {
        contentType: 'application/strategic-merge-patch+json',
        body: {
          status: {
            addresses: [
              { type: 'InternalIP', address: ip },
              { type: 'Hostname', address: name },
            ],
            capacity: { 'ephemeral-storage': this.opts.ephemeralStorage },
            allocatable: { 'ephemeral-storage': this.opts.ephemeralStorage },
          },
        },
      });
    }
    const names = new Set(this.nodeNames);
    const handle = (n: V1Node): void => {
      if (!names.has(n.metadata?.name ?? '')) return;
      const add = missingAllocatable(n);
      if (Object.keys(add).length === 0) return;
      void this.client
        .request('PATCH', `/api/v1/nodes/${n.metadata?.name ?? ''}/status`, {
          contentType: 'application/strategic-merge-patch+json',
          body: { status: { allocatable: add } },
        })
        .catch((e: unknown) => this.opts.log?.(`fake node status ${n.metadata?.name ?? ''}: ${(e as Error).message}`));
    };
    this.reflector = new Reflector<V1Node>(this.client, '/api/v1/nodes', {
      add: handle,
      update: handle,
      delete: () => undefined,
      error: (e) => this.opts.log?.(`fake node status watch: ${e.message}`),
    });
    await this.reflector.start();
  }

  stop(): void {
    this.reflector?.stop();
  }
}
