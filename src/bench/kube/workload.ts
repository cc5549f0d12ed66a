/**
 * What `sits bench kube` puts on each control plane, identical for both schedulers: fake GPU nodes in the
 * documented node format (docs/kubernetes.md) and plain 1-GPU pods, created by the same code with the same
 * concurrency.
 */
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import type { KubeClient } from '../../kube/client/client.ts';
import { isStatus } from '../../kube/client/client.ts';
import { GPU_RESOURCE, LABEL } from '../../api/wire.ts';
import { nodeObjectFor } from '../../kube/cache/labels.ts';
import { NODE_SHAPES } from '../../core/model/presets.ts';
import { GPU_MODELS } from '../../core/model/gpu.ts';

export interface NodeShapeChoice {
  /** A SITS preset (e.g. dgx-h100); undefined = plain nodes with `gpusPerNode` GPUs and no topology annotation. */
  readonly preset?: string;
  readonly gpusPerNode: number;
  readonly gpuModel: string;
  readonly nodesPerRack: number;
}

export function gpusPerNode(c: NodeShapeChoice): number {
  if (c.preset === undefined) return c.gpusPerNode;
  const s = NODE_SHAPES[c.preset];
  if (s === undefined) throw new Error(`unknown preset "${c.preset}" (presets: ${Object.keys(NODE_SHAPES).join(', ')})`);
  return s.gpus.length;
}

/**
 * What the pods ask for besides one GPU. `plain`: nothing (scheduler_perf's default). `constraints` (issue 11
 * "Numbers"): every second pod carries one of six constraints, in rotation — a required node affinity (`In`
 * half the racks), a preferred node affinity (weight 50 on block-0), a toleration of the taint every 8th node
 * carries (`dedicated=bench:NoSchedule`), a required node affinity with `NotIn` (not rack-0), a required pod
 * anti-affinity on the hostname within one of 8 groups, or a DoNotSchedule spread (maxSkew 1) over hostnames
 * within one of 8 groups. Both schedulers get the same pods; placements are checked afterwards (constraintViolations).
 */
export type BenchMix = 'plain' | 'constraints';
export const BENCH_MIXES: readonly BenchMix[] = ['plain', 'constraints'];
export const BENCH_TAINT = { key: 'dedicated', value: 'bench', effect: 'NoSchedule' } as const;

/** Node objects (with status) for `count` fake nodes: racks of `nodesPerRack`, 4 racks per block. */
export function benchNodes(count: number, c: NodeShapeChoice, mix: BenchMix = 'plain'): V1Node[] {
  return Array.from({ length: count }, (_, i) => {
    const name = `node-${String(i).padStart(5, '0')}`;
    const rack = Math.floor(i / c.nodesPerRack);
    const loc = { zone: 'zone-0', block: `block-${Math.floor(rack / 4)}`, rack: `rack-${rack}` };
    let labels: Record<string, string>;
    let annotations: Record<string, string> = {};
    let capacity: Record<string, string>;
    if (c.preset !== undefined) {
      const o = nodeObjectFor(name, c.preset, loc);
      labels = o.labels;
      annotations = o.annotations;
      capacity = o.capacity;
    } else {
      const model = GPU_MODELS[c.gpuModel];
      labels = {
        'kubernetes.io/hostname': name,
        [LABEL.zone]: loc.zone,
        [LABEL.block]: loc.block,
        [LABEL.rack]: loc.rack,
        [LABEL.gpuModel]: c.gpuModel,
        [LABEL.gfdCount]: String(c.gpusPerNode),
        ...(model === undefined ? {} : { [LABEL.gfdMemory]: String(model.memoryMiB) }),
      };
      capacity = { cpu: String(16 * c.gpusPerNode), memory: `${128 * c.gpusPerNode}Gi`, pods: '110', [GPU_RESOURCE]: String(c.gpusPerNode) };
    }
    const now = new Date().toISOString();
    return {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name, labels: { 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64', ...labels }, annotations },
      spec: mix === 'constraints' && i % 8 === 7 ? { taints: [{ ...BENCH_TAINT }] } : {},
      status: {
        capacity,
        allocatable: capacity,
        conditions: [{ type: 'Ready', status: 'True', reason: 'FakeNodeReady', message: 'fake node (sits bench kube, no kubelet)', lastHeartbeatTime: now as unknown as Date, lastTransitionTime: now as unknown as Date }],
        addresses: [{ type: 'Hostname', address: name }],
      },
    } as V1Node;
  });
}

/** Pod `i`'s constraint in the `constraints` mix: spec fields and the labels other pods' terms select. */
export interface BenchConstraint {
  readonly spec: Partial<NonNullable<V1Pod['spec']>>;
  readonly labels: Readonly<Record<string, string>>;
}

/** Groups of the inter-pod constraints: pods of one group avoid each other's node, or spread over racks. */
export const BENCH_GROUPS = 8;
const GROUP_LABEL = 'sits-bench/group';

/** The constraint of pod `i` in the `constraints` mix (racks are counted over `racks` racks). */
export function benchConstraint(i: number, racks: number): BenchConstraint {
  if (i % 2 === 0) return { spec: {}, labels: {} };
  const half = Array.from({ length: Math.max(1, Math.ceil(racks / 2)) }, (_, r) => `rack-${r}`);
  const k = i >> 1;
  const group = `g${k % BENCH_GROUPS}`;
  switch (k % 6) {
    case 0:
      return { spec: { affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: LABEL.rack, operator: 'In', values: half }] }] } } } }, labels: {} };
    case 1:
      return { spec: { affinity: { nodeAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 50, preference: { matchExpressions: [{ key: LABEL.block, operator: 'In', values: ['block-0'] }] } }] } } }, labels: {} };
    case 2:
      return { spec: { tolerations: [{ key: BENCH_TAINT.key, operator: 'Equal', value: BENCH_TAINT.value, effect: BENCH_TAINT.effect }] }, labels: {} };
    case 3:
      return { spec: { affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: LABEL.rack, operator: 'NotIn', values: ['rack-0'] }] }] } } } }, labels: {} };
    case 4: {
      const labels = { [GROUP_LABEL]: `anti-${group}` };
      return { spec: { affinity: { podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [{ topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: labels } }] } } }, labels };
    }
    default: {
      const labels = { [GROUP_LABEL]: `spread-${group}` };
      // Over hostnames: a rack spread with maxSkew 1 strands pods once a rack's GPUs are full (kube's rule: a full
      // domain still counts as the minimum), which would measure waiting, not scheduling.
      return { spec: { topologySpreadConstraints: [{ maxSkew: 1, topologyKey: 'kubernetes.io/hostname', whenUnsatisfiable: 'DoNotSchedule', labelSelector: { matchLabels: labels } }] }, labels };
    }
  }
}

/**
 * Pods of the constraints mix bound where their constraint forbids (a required affinity unmet, or a tainted node
 * without the toleration): a scheduler that ignored the constraints would look fast; this counts it.
 */
export function constraintViolations(nodeOf: ReadonlyMap<string, string>, nodes: readonly V1Node[], racks: number, pods: number, name: (i: number) => string): number {
  const byName = new Map(nodes.map((n) => [n.metadata?.name ?? '', n]));
  const allHosts = nodes.map((n) => n.metadata?.name ?? '');
  let bad = 0;
  const anti = new Map<string, Set<string>>();
  const spread = new Map<string, Map<string, number>>();
  for (let i = 0; i < pods; i++) {
    const node = byName.get(nodeOf.get(name(i)) ?? '');
    if (node === undefined) continue;
    const c = benchConstraint(i, racks);
    const tainted = (node.spec?.taints ?? []).some((t) => t.key === BENCH_TAINT.key);
    if (tainted && c.spec.tolerations === undefined) bad++;
    const group = c.labels[GROUP_LABEL];
    if (group?.startsWith('anti-') === true) {
      const seen = anti.get(group) ?? new Set<string>();
      if (seen.has(node.metadata?.name ?? '')) bad++;
      seen.add(node.metadata?.name ?? '');
      anti.set(group, seen);
    } else if (group?.startsWith('spread-') === true) {
      const counts = spread.get(group) ?? new Map<string, number>();
      const host = node.metadata?.name ?? '';
      counts.set(host, (counts.get(host) ?? 0) + 1);
      spread.set(group, counts);
    }
    const expr = c.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms[0]?.matchExpressions?.[0];
    if (expr === undefined) continue;
    const v = node.metadata?.labels?.[expr.key];
    const inValues = v !== undefined && (expr.values ?? []).includes(v);
    if ((expr.operator === 'In' && !inValues) || (expr.operator === 'NotIn' && inValues)) bad++;
  }
  // With only additions and every node eligible, DoNotSchedule keeps each group's final skew within maxSkew 1.
  for (const counts of spread.values()) {
    const per = allHosts.map((h) => counts.get(h) ?? 0);
    if (Math.max(...per) - Math.min(...per) > 1) bad++;
  }
  return bad;
}

/** A pod asking for one GPU (and a little CPU and memory, as scheduler_perf's default pod does), plus its constraint. */
export function benchPod(namespace: string, name: string, schedulerName: string, constraint: BenchConstraint = { spec: {}, labels: {} }): V1Pod {
  const requests = { cpu: '100m', memory: '500Mi', [GPU_RESOURCE]: '1' };
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace, labels: { app: 'sits-bench', ...constraint.labels } },
    spec: {
      ...constraint.spec,
      schedulerName,
      containers: [{ name: 'pause', image: 'registry.k8s.io/pause:3.10', resources: { requests, limits: requests } }],
      terminationGracePeriodSeconds: 0,
    },
  };
}

export const podName = (i: number): string => `pod-${String(i).padStart(6, '0')}`;

/** Runs `fn(i)` for i in [0, n) with at most `concurrency` at a time (scheduler_perf creates with 30 workers). */
export async function runPool(n: number, concurrency: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  let failure: unknown;
  const worker = async (): Promise<void> => {
    while (failure === undefined) {
      const i = next++;
      if (i >= n) return;
      try {
        await fn(i);
      } catch (e) {
        failure ??= e;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, n) }, worker));
  if (failure !== undefined) throw failure;
}

/** POST with a few retries on transient errors (429, 5xx, connection resets); 409 counts as created. */
export async function createWithRetry(client: KubeClient, path: string, body: unknown): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await client.post(path, body);
      return;
    } catch (e) {
      if (isStatus(e, 409)) return;
      const status = (e as { status?: number }).status;
      const transient = status === undefined || status === 429 || status >= 500;
      if (!transient || attempt >= 5) throw e;
      await new Promise((r) => setTimeout(r, 100 * 2 ** attempt));
    }
  }
}

export async function createNodes(client: KubeClient, nodes: readonly V1Node[], concurrency: number): Promise<void> {
  await runPool(nodes.length, concurrency, (i) => createWithRetry(client, '/api/v1/nodes', nodes[i]));
}
