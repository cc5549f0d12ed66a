/**
 * The workload file (`sits schedule --workload`): pods and gangs to place, in submission order.
 *
 * ```yaml
 * kind: Workload
 * pods:
 *   - {name: infer, count: 4, gpu: 0.5, cpuMilli: 4000, memoryMiB: 16384}
 *   - {name: big, gpu: 2, gpuModels: [H100-SXM], minComputeCapability: sm_90}
 * gangs:
 *   - {name: train-a, replicas: 16, minMember: 16, pod: {gpu: 1}, topology: {required: rack}}
 * ```
 * `gpu` is a device count (1, 2, 8) or a fraction of one device in thousandths (0.25, 0.5); `gpuMilli` gives the fraction
 * in milli-GPU instead. `minComputeCapability` is `sm_90`, `9.0`, `9` or `90`, quoted or not (an unquoted `9.0` is read
 * as written, not as the number 9). Optional `arrivalSec`/`durationSec` are used by the simulator.
 *
 * Kubernetes Pod fields, with their Kubernetes names and meaning (ADR 0049, 0054): `namespace`, `labels`,
 * `nodeSelector`, `tolerations`, `affinity.nodeAffinity`, `affinity.podAffinity`/`podAntiAffinity`,
 * `topologySpreadConstraints`, `schedulingGates`, `containers` / `initContainers` (with `restartPolicy: Always`
 * for sidecars) with `resources` and `ports` (hostPort, hostIP, protocol), and `overhead`:
 *
 * ```yaml
 *   - name: web
 *     containers: [{resources: {requests: {cpu: 500m, memory: 1Gi, rdma/hca: 1}}, ports: [{containerPort: 80, hostPort: 8080}]}]
 *     affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms:
 *       [{matchExpressions: [{key: zone, operator: In, values: [a]}]}]}}}
 * ```
 * With `containers`, cpu and memory come from them (as kube-scheduler sums them), not from `cpuMilli`/`memoryMiB`.
 * Input the apiserver would reject (In without values, Gt with a non-integer, matchFields other than
 * metadata.name, an empty toleration key without Exists) is an error naming the field.
 * `volumes` (ADR 0070): `persistentVolumeClaim`, generic `ephemeral` (claim `<pod>-<volume>`), inline
 * `gcePersistentDisk`/`awsElasticBlockStore`/`iscsi`/`rbd`, and sources the scheduler ignores as kube's does (emptyDir,
 * configMap, secret, hostPath, projected, downwardAPI); claims resolve against a scenario's `storage:` (none: not found).
 */
import { podClaims, podInlineDisks } from '../api/storage.ts';
import { Type, type Static } from '@sinclair/typebox';
import { COMPUTE_CAPABILITY_FORMS, parseComputeCapability } from '../core/model/gpu.ts';
import { makePod, type GangSpec, type PodSpec } from '../core/model/pod.ts';
import { TOPOLOGY_LEVELS, type TopologyLevel } from '../core/model/topology.ts';
import { err, ok, type Result } from '../core/result.ts';
import { InputError, issueAt, parseYaml, validateYaml, type InputIssue, type YamlSource } from './yaml-source.ts';
import type { HostPort, NodeAffinity, NodeSelectorRequirement, NodeSelectorTerm, PodAffinityRules, TopologySpreadConstraint } from '../core/model/pod.ts';
import { readPodResources } from '../api/pod-resources.ts';
import { GPU_RESOURCE } from '../api/wire.ts';
import { PodAffinityRulesT, podAffinityRules, topologySpread, TopologySpreadT } from './pod-affinity-input.ts';

const Level = Type.Union(TOPOLOGY_LEVELS.map((l) => Type.Literal(l)));

const Quantity = Type.Union([Type.String({ minLength: 1 }), Type.Number({ minimum: 0 })]);
const Resources = Type.Record(Type.String({ minLength: 1 }), Quantity);
const RequirementT = Type.Object(
  {
    key: Type.String({ minLength: 1 }),
    operator: Type.Union(['In', 'NotIn', 'Exists', 'DoesNotExist', 'Gt', 'Lt'].map((o) => Type.Literal(o))),
    values: Type.Optional(Type.Array(Type.String())),
  },
  { additionalProperties: false },
);
const TermT = Type.Object(
  { matchExpressions: Type.Optional(Type.Array(RequirementT)), matchFields: Type.Optional(Type.Array(RequirementT)) },
  { additionalProperties: false },
);
const AffinityT = Type.Object(
  {
    nodeAffinity: Type.Optional(
      Type.Object(
        {
          requiredDuringSchedulingIgnoredDuringExecution: Type.Optional(
            Type.Object({ nodeSelectorTerms: Type.Array(TermT, { minItems: 1 }) }, { additionalProperties: false }),
          ),
          preferredDuringSchedulingIgnoredDuringExecution: Type.Optional(
            Type.Array(Type.Object({ weight: Type.Integer({ minimum: 1, maximum: 100 }), preference: TermT }, { additionalProperties: false })),
          ),
        },
        { additionalProperties: false },
      ),
    ),
    podAffinity: Type.Optional(PodAffinityRulesT),
    podAntiAffinity: Type.Optional(PodAffinityRulesT),
  },
  { additionalProperties: false },
);
const PortT = Type.Object(
  {
    name: Type.Optional(Type.String()),
    containerPort: Type.Integer({ minimum: 1, maximum: 65535 }),
    hostPort: Type.Optional(Type.Integer({ minimum: 0, maximum: 65535 })),
    hostIP: Type.Optional(Type.String()),
    protocol: Type.Optional(Type.Union([Type.Literal('TCP'), Type.Literal('UDP'), Type.Literal('SCTP')])),
  },
  { additionalProperties: false },
);
const containerFields = {
  name: Type.Optional(Type.String()),
  resources: Type.Optional(Type.Object({ requests: Type.Optional(Resources), limits: Type.Optional(Resources) }, { additionalProperties: false })),
  ports: Type.Optional(Type.Array(PortT)),
};
const ContainerT = Type.Object(containerFields, { additionalProperties: false });
const InitContainerT = Type.Object({ ...containerFields, restartPolicy: Type.Optional(Type.Literal('Always')) }, { additionalProperties: false });

const VolumeT = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 63 }),
    persistentVolumeClaim: Type.Optional(
      Type.Object({ claimName: Type.String({ minLength: 1 }), readOnly: Type.Optional(Type.Boolean()) }, { additionalProperties: false }),
    ),
    ephemeral: Type.Optional(Type.Object({ volumeClaimTemplate: Type.Unknown() }, { additionalProperties: false })),
    gcePersistentDisk: Type.Optional(
      Type.Object(
        {
          pdName: Type.String({ minLength: 1 }),
          readOnly: Type.Optional(Type.Boolean()),
          fsType: Type.Optional(Type.String()),
          partition: Type.Optional(Type.Integer()),
        },
        { additionalProperties: false },
      ),
    ),
    awsElasticBlockStore: Type.Optional(
      Type.Object(
        {
          volumeID: Type.String({ minLength: 1 }),
          readOnly: Type.Optional(Type.Boolean()),
          fsType: Type.Optional(Type.String()),
          partition: Type.Optional(Type.Integer()),
        },
        { additionalProperties: false },
      ),
    ),
    iscsi: Type.Optional(
      Type.Object(
        { iqn: Type.String({ minLength: 1 }), targetPortal: Type.String(), lun: Type.Integer(), readOnly: Type.Optional(Type.Boolean()) },
        { additionalProperties: true },
      ),
    ),
    rbd: Type.Optional(
      Type.Object(
        {
          monitors: Type.Array(Type.String(), { minItems: 1 }),
          image: Type.String({ minLength: 1 }),
          pool: Type.Optional(Type.String()),
          readOnly: Type.Optional(Type.Boolean()),
        },
        { additionalProperties: true },
      ),
    ),
    emptyDir: Type.Optional(Type.Unknown()),
    configMap: Type.Optional(Type.Unknown()),
    secret: Type.Optional(Type.Unknown()),
    hostPath: Type.Optional(Type.Unknown()),
    projected: Type.Optional(Type.Unknown()),
    downwardAPI: Type.Optional(Type.Unknown()),
  },
  { additionalProperties: false },
);

export const PodT = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    count: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })),
    gpu: Type.Optional(Type.Number({ minimum: 0, maximum: 64 })),
    gpuMilli: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
    gpuMemoryMiB: Type.Optional(Type.Integer({ minimum: 0 })),
    cpuMilli: Type.Optional(Type.Integer({ minimum: 0 })),
    memoryMiB: Type.Optional(Type.Integer({ minimum: 0 })),
    gpuModels: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
    minComputeCapability: Type.Optional(Type.Union([Type.String(), Type.Number()])),
    priority: Type.Optional(Type.Integer()),
    queue: Type.Optional(Type.String({ minLength: 1 })),
    nodeSelector: Type.Optional(Type.Record(Type.String(), Type.String())),
    tolerations: Type.Optional(
      Type.Array(
        Type.Object(
          {
            key: Type.Optional(Type.String()),
            operator: Type.Optional(Type.Union([Type.Literal('Exists'), Type.Literal('Equal')])),
            value: Type.Optional(Type.String()),
            effect: Type.Optional(Type.Union([Type.Literal('NoSchedule'), Type.Literal('PreferNoSchedule'), Type.Literal('NoExecute')])),
          },
          { additionalProperties: false },
        ),
      ),
    ),
    namespace: Type.Optional(Type.String({ minLength: 1, maxLength: 63 })),
    labels: Type.Optional(Type.Record(Type.String({ minLength: 1 }), Type.String())),
    affinity: Type.Optional(AffinityT),
    topologySpreadConstraints: Type.Optional(Type.Array(TopologySpreadT)),
    schedulingGates: Type.Optional(Type.Array(Type.Object({ name: Type.String({ minLength: 1 }) }, { additionalProperties: false }))),
    /** kube's spec.preemptionPolicy: Never = waits for room instead of preempting lower-priority pods. */
    preemptionPolicy: Type.Optional(Type.Union([Type.Literal('PreemptLowerPriority'), Type.Literal('Never')])),
    /**
     * spec.volumes: a persistentVolumeClaim or a generic ephemeral volume (its claim is `<pod>-<volume>`) uses a
     * claim the scenario's `storage` lists (ADR 0070); other volume sources need nothing from the scheduler.
     */
    volumes: Type.Optional(Type.Array(VolumeT)),
    containers: Type.Optional(Type.Array(ContainerT, { minItems: 1 })),
    initContainers: Type.Optional(Type.Array(InitContainerT)),
    overhead: Type.Optional(Resources),
    arrivalSec: Type.Optional(Type.Number({ minimum: 0 })),
    durationSec: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
  },
  { additionalProperties: false },
);

const GangT = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    replicas: Type.Integer({ minimum: 1, maximum: 100_000 }),
    minMember: Type.Optional(Type.Integer({ minimum: 1 })),
    pod: Type.Omit(PodT, ['name', 'count', 'arrivalSec', 'durationSec']),
    topology: Type.Optional(Type.Object({ required: Type.Optional(Level), preferred: Type.Optional(Level) }, { additionalProperties: false })),
    priority: Type.Optional(Type.Integer()),
    queue: Type.Optional(Type.String({ minLength: 1 })),
    arrivalSec: Type.Optional(Type.Number({ minimum: 0 })),
    durationSec: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
  },
  { additionalProperties: false },
);

export const WorkloadFileSchema = Type.Object(
  {
    apiVersion: Type.Optional(Type.String()),
    kind: Type.Optional(Type.Literal('Workload')),
    pods: Type.Optional(Type.Array(PodT)),
    gangs: Type.Optional(Type.Array(GangT)),
  },
  { additionalProperties: false },
);
type PodInput = Static<typeof PodT>;

export interface Timing {
  readonly arrivalSec: number;
  readonly durationSec?: number;
}

/** One schedulable unit of a workload, in file order (pods first, then gangs). */
export type WorkloadUnit = ({ readonly kind: 'pod'; readonly pod: PodSpec } | { readonly kind: 'gang'; readonly gang: GangSpec }) & { readonly timing: Timing };

export function loadWorkloadText(file: string, text: string): Result<WorkloadUnit[], InputError> {
  const src = parseYaml(file, text);
  return src.ok ? loadWorkload(src.value) : src;
}

/** Loads the workload at `prefix` of a parsed document. */
export function loadWorkload(src: YamlSource, prefix: readonly (string | number)[] = []): Result<WorkloadUnit[], InputError> {
  const v = validateYaml(src, WorkloadFileSchema, prefix);
  if (!v.ok) return v;
  const issues: InputIssue[] = [];
  const at = (path: (string | number)[], msg: string): void => {
    issues.push(issueAt(src, [...prefix, ...path], msg));
  };
  const units: WorkloadUnit[] = [];
  const ids = new Set<string>();
  const claim = (id: string, path: (string | number)[]): boolean => {
    if (ids.has(id)) {
      at(path, `duplicate name "${id}"`);
      return false;
    }
    ids.add(id);
    return true;
  };
  (v.value.pods ?? []).forEach((p, i) => {
    const path = ['pods', i];
    const count = p.count ?? 1;
    const base = p.name ?? `pod-${i}`;
    for (let k = 0; k < count; k++) {
      const id = count === 1 ? base : `${base}-${k}`;
      if (!claim(id, [...path, 'name'])) return;
      const pod = toPod(id, p, {}, (f, m) => at([...path, ...fieldPath(f)], m));
      if (pod === undefined) return;
      units.push({ kind: 'pod', pod, timing: timing(p.arrivalSec, p.durationSec) });
    }
  });
  (v.value.gangs ?? []).forEach((g, i) => {
    const path = ['gangs', i];
    if (!claim(g.name, [...path, 'name'])) return;
    const minMember = g.minMember ?? g.replicas;
    if (minMember > g.replicas) {
      at([...path, 'minMember'], `minMember ${minMember} exceeds replicas ${g.replicas}`);
      return;
    }
    const topology = g.topology ?? {};
    if (
      topology.required !== undefined &&
      topology.preferred !== undefined &&
      TOPOLOGY_LEVELS.indexOf(topology.preferred) > TOPOLOGY_LEVELS.indexOf(topology.required)
    ) {
      at([...path, 'topology', 'preferred'], `preferred level ${topology.preferred} is wider than required level ${topology.required}`);
      return;
    }
    const members: PodSpec[] = [];
    for (let k = 0; k < g.replicas; k++) {
      // Members are pods too: their ids must not collide with another pod's (allocate would throw).
      if (!claim(`${g.name}-${k}`, [...path, 'name'])) return;
      const pod = toPod(
        `${g.name}-${k}`,
        g.pod,
        { gang: g.name, priority: g.priority ?? g.pod.priority ?? 0, queue: g.queue ?? g.pod.queue ?? 'default' },
        (f, m) => at([...path, 'pod', ...fieldPath(f)], m),
      );
      if (pod === undefined) return;
      members.push(pod);
    }
    const gang: GangSpec = {
      name: g.name,
      minMember,
      members,
      topology: {
        ...(topology.required === undefined ? {} : { required: topology.required as TopologyLevel }),
        ...(topology.preferred === undefined ? {} : { preferred: topology.preferred as TopologyLevel }),
      },
      priority: g.priority ?? 0,
      queue: g.queue ?? 'default',
    };
    units.push({ kind: 'gang', gang, timing: timing(g.arrivalSec, g.durationSec) });
  });
  return issues.length > 0 ? err(new InputError(issues)) : ok(units);
}

function timing(arrivalSec: number | undefined, durationSec: number | undefined): Timing {
  return { arrivalSec: arrivalSec ?? 0, ...(durationSec === undefined ? {} : { durationSec }) };
}

/** A dotted field of toPod's reports (`tolerations.0.operator`) as a path for issueAt. */
export function fieldPath(field: string): (string | number)[] {
  return field.split('.').map((x) => (/^\d+$/.test(x) ? Number(x) : x));
}

/** `at` reports a problem at a field given as a dotted path relative to the pod (see fieldPath). */
export function toPod(
  id: string,
  p: Omit<PodInput, 'name' | 'count'>,
  extra: { gang?: string; priority?: number; queue?: string },
  at: (field: string, msg: string) => void,
): PodSpec | undefined {
  const k8s = kubeFields(p, at);
  if (k8s === undefined) return undefined;
  let gpuCount = k8s.gpuCount;
  let gpuMilli = gpuCount > 0 ? 1000 : 0;
  if (p.gpuMilli !== undefined) {
    if (p.gpu !== undefined && p.gpu !== 1) {
      at('gpuMilli', 'gpuMilli describes one device: use it with gpu: 1 or without gpu');
      return undefined;
    }
    gpuCount = 1;
    gpuMilli = p.gpuMilli;
  } else if (p.gpu !== undefined && p.gpu > 0 && gpuCount > 0) {
    at('gpu', `give the GPUs either as gpu or as ${GPU_RESOURCE} in containers, not both`);
    return undefined;
  } else if (p.gpu !== undefined && p.gpu > 0) {
    if (p.gpu < 1) {
      // A shared device in thousandths: 0.0004 used to become a 0-milli share, 0.3333 a silent 333.
      const milli = p.gpu * 1000;
      if (Math.abs(milli - Math.round(milli)) > 1e-9) {
        at('gpu', `${p.gpu} GPUs: a share of one device is given in thousandths, 0.001 to 0.999 (or as gpuMilli)`);
        return undefined;
      }
      gpuCount = 1;
      gpuMilli = Math.round(milli);
    } else if (Number.isInteger(p.gpu)) {
      gpuCount = p.gpu;
      gpuMilli = 1000;
    } else {
      at('gpu', `${p.gpu} GPUs: use a whole number of devices, or a fraction below 1 for a shared device`);
      return undefined;
    }
  }
  let cc = 0;
  if (p.minComputeCapability !== undefined) {
    const parsed = parseComputeCapability(p.minComputeCapability);
    if (parsed === undefined) {
      at('minComputeCapability', `"${p.minComputeCapability}" is not a compute capability (${COMPUTE_CAPABILITY_FORMS})`);
      return undefined;
    }
    cc = parsed;
  }
  return makePod(
    id,
    {
      cpuMilli: k8s.cpuMilli ?? p.cpuMilli ?? 1000,
      memoryMiB: k8s.memoryMiB ?? p.memoryMiB ?? 4096,
      gpuCount,
      gpuMilli,
      ...(p.gpuMemoryMiB === undefined ? {} : { gpuMemoryMiB: p.gpuMemoryMiB }),
      ...(k8s.scalar === undefined ? {} : { scalar: k8s.scalar }),
    },
    {
      gpuModels: p.gpuModels ?? [],
      minComputeCapability: cc,
      priority: extra.priority ?? p.priority ?? 0,
      queue: extra.queue ?? p.queue ?? 'default',
      nodeSelector: p.nodeSelector ?? {},
      tolerations: (p.tolerations ?? []).map((t) => ({ ...t })),
      ...(extra.gang === undefined ? {} : { gang: extra.gang }),
      ...(k8s.nodeAffinity === undefined ? {} : { nodeAffinity: k8s.nodeAffinity }),
      hostPorts: k8s.hostPorts,
      claims: podClaims(p.volumes, id),
      inlineDisks: podInlineDisks(p.volumes),
      schedulingGates: (p.schedulingGates ?? []).map((g) => g.name),
      ...(p.preemptionPolicy === 'Never' ? { preemptionPolicy: 'Never' as const } : {}),
      ...(p.namespace === undefined ? {} : { namespace: p.namespace }),
      ...(p.labels === undefined ? {} : { labels: p.labels }),
      ...(k8s.podAffinity === undefined ? {} : { podAffinity: k8s.podAffinity }),
      ...(k8s.podAntiAffinity === undefined ? {} : { podAntiAffinity: k8s.podAntiAffinity }),
      ...(k8s.topologySpread === undefined ? {} : { topologySpread: k8s.topologySpread }),
    },
  );
}

interface KubeFields {
  readonly cpuMilli?: number;
  readonly memoryMiB?: number;
  readonly gpuCount: number;
  readonly scalar?: Readonly<Record<string, number>>;
  readonly nodeAffinity?: NodeAffinity;
  readonly hostPorts: HostPort[];
  readonly podAffinity?: PodAffinityRules;
  readonly podAntiAffinity?: PodAffinityRules;
  readonly topologySpread?: TopologySpreadConstraint[];
}

/** The Kubernetes fields of a workload pod, checked as the apiserver checks them; undefined after reporting a problem. */
function kubeFields(p: Omit<PodInput, 'name' | 'count'>, at: (field: string, msg: string) => void): KubeFields | undefined {
  let ok = true;
  const bad = (field: string, msg: string): void => {
    ok = false;
    at(field, msg);
  };
  (p.tolerations ?? []).forEach((t, i) => {
    if ((t.key ?? '') === '' && t.operator !== 'Exists')
      bad(`tolerations.${i}.operator`, 'operator must be Exists when key is empty (it then tolerates every taint)');
    if (t.operator === 'Exists' && (t.value ?? '') !== '') bad(`tolerations.${i}.value`, 'value must be empty when operator is Exists');
  });
  const na = p.affinity?.nodeAffinity;
  const term = (t: Static<typeof TermT>, field: string): NodeSelectorTerm => {
    (t.matchExpressions ?? []).forEach((r, i) => {
      const problem = requirementProblem(r);
      if (problem !== undefined) bad(`${field}.matchExpressions.${i}`, problem);
    });
    (t.matchFields ?? []).forEach((r, i) => {
      if (r.key !== 'metadata.name') bad(`${field}.matchFields.${i}.key`, `"${r.key}" is not a supported field (only metadata.name)`);
      else if ((r.operator !== 'In' && r.operator !== 'NotIn') || (r.values ?? []).length !== 1)
        bad(`${field}.matchFields.${i}`, 'metadata.name takes In or NotIn with exactly one value');
    });
    return {
      ...(t.matchExpressions === undefined ? {} : { matchExpressions: t.matchExpressions.map((r) => r as NodeSelectorRequirement) }),
      ...(t.matchFields === undefined ? {} : { matchFields: t.matchFields.map((r) => r as NodeSelectorRequirement) }),
    };
  };
  const base = 'affinity.nodeAffinity';
  const required = na?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms.map((t, i) =>
    term(t, `${base}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms.${i}`),
  );
  const preferred = na?.preferredDuringSchedulingIgnoredDuringExecution?.map((t, i) => ({
    weight: t.weight,
    preference: term(t.preference, `${base}.preferredDuringSchedulingIgnoredDuringExecution.${i}.preference`),
  }));
  const nodeAffinity =
    required === undefined && preferred === undefined
      ? undefined
      : { ...(required === undefined ? {} : { required }), ...(preferred === undefined ? {} : { preferred }) };
  const hostPorts: HostPort[] = [];
  const ports = (cs: readonly Static<typeof InitContainerT>[] | undefined, sidecarsOnly: boolean): void => {
    for (const c of cs ?? []) {
      if (sidecarsOnly && c.restartPolicy !== 'Always') continue;
      for (const q of c.ports ?? [])
        if ((q.hostPort ?? 0) > 0)
          hostPorts.push({ port: q.hostPort as number, protocol: q.protocol ?? 'TCP', ip: q.hostIP === undefined || q.hostIP === '' ? '0.0.0.0' : q.hostIP });
    }
  };
  ports(p.containers, false);
  ports(p.initContainers, true);
  let res: { cpuMilli?: number; memoryMiB?: number; gpuCount: number; scalar?: Readonly<Record<string, number>> } = { gpuCount: 0 };
  if (p.containers !== undefined || p.initContainers !== undefined || p.overhead !== undefined) {
    if (p.containers === undefined) bad('initContainers', 'give containers too: initContainers and overhead add to their requests');
    if (p.cpuMilli !== undefined) bad('cpuMilli', 'with containers, cpu comes from their resources');
    if (p.memoryMiB !== undefined) bad('memoryMiB', 'with containers, memory comes from their resources');
    const r = readPodResources(p, 'spec');
    if (!r.ok) bad('containers', r.error);
    else res = r.value;
  }
  const podAffinity = podAffinityRules(p.affinity?.podAffinity, 'affinity.podAffinity', bad);
  const podAntiAffinity = podAffinityRules(p.affinity?.podAntiAffinity, 'affinity.podAntiAffinity', bad);
  const spread = topologySpread(p.topologySpreadConstraints, 'topologySpreadConstraints', bad);
  return ok
    ? {
        ...res,
        ...(nodeAffinity === undefined ? {} : { nodeAffinity }),
        hostPorts,
        ...(podAffinity === undefined ? {} : { podAffinity }),
        ...(podAntiAffinity === undefined ? {} : { podAntiAffinity }),
        ...(spread === undefined ? {} : { topologySpread: spread }),
      }
    : undefined;
}

/** Why the apiserver would reject a node selector requirement, or undefined. */
function requirementProblem(r: Static<typeof RequirementT>): string | undefined {
  const n = (r.values ?? []).length;
  switch (r.operator) {
    case 'In':
    case 'NotIn':
      return n === 0 ? `${r.operator} needs at least one value` : undefined;
    case 'Exists':
    case 'DoesNotExist':
      return n > 0 ? `${r.operator} takes no values` : undefined;
    default:
      return n !== 1 || !/^[+-]?\d+$/.test((r.values ?? [])[0] as string) ? `${r.operator} takes exactly one integer value` : undefined;
  }
}
