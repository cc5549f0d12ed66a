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
 * `gpu` is a device count (1, 2, 8) or a fraction of one device (0.25, 0.5); `gpuMilli` gives the fraction
 * in milli-GPU instead. Optional `arrivalSec`/`durationSec` are used by the simulator.
 */
import { Type, type Static } from '@sinclair/typebox';
import { parseComputeCapability } from '../core/model/gpu.ts';
import { makePod, type GangSpec, type PodSpec } from '../core/model/pod.ts';
import { TOPOLOGY_LEVELS, type TopologyLevel } from '../core/model/topology.ts';
import { err, ok, type Result } from '../core/result.ts';
import { InputError, issueAt, parseYaml, validateYaml, type InputIssue, type YamlSource } from './yaml-source.ts';

const Level = Type.Union(TOPOLOGY_LEVELS.map((l) => Type.Literal(l)));

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
    minComputeCapability: Type.Optional(Type.Union([Type.String(), Type.Integer()])),
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
  { apiVersion: Type.Optional(Type.String()), kind: Type.Optional(Type.Literal('Workload')), pods: Type.Optional(Type.Array(PodT)), gangs: Type.Optional(Type.Array(GangT)) },
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
      const pod = toPod(id, p, {}, (f, m) => at([...path, f], m));
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
    if (topology.required !== undefined && topology.preferred !== undefined && TOPOLOGY_LEVELS.indexOf(topology.preferred) > TOPOLOGY_LEVELS.indexOf(topology.required)) {
      at([...path, 'topology', 'preferred'], `preferred level ${topology.preferred} is wider than required level ${topology.required}`);
      return;
    }
    const members: PodSpec[] = [];
    for (let k = 0; k < g.replicas; k++) {
      // Members are pods too: their ids must not collide with another pod's (allocate would throw).
      if (!claim(`${g.name}-${k}`, [...path, 'name'])) return;
      const pod = toPod(`${g.name}-${k}`, g.pod, { gang: g.name, priority: g.priority ?? g.pod.priority ?? 0, queue: g.queue ?? g.pod.queue ?? 'default' }, (f, m) => at([...path, 'pod', f], m));
      if (pod === undefined) return;
      members.push(pod);
    }
    const gang: GangSpec = {
      name: g.name,
      minMember,
      members,
      topology: { ...(topology.required === undefined ? {} : { required: topology.required as TopologyLevel }), ...(topology.preferred === undefined ? {} : { preferred: topology.preferred as TopologyLevel }) },
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

export function toPod(id: string, p: Omit<PodInput, 'name' | 'count'>, extra: { gang?: string; priority?: number; queue?: string }, at: (field: string, msg: string) => void): PodSpec | undefined {
  let gpuCount = 0;
  let gpuMilli = 0;
  if (p.gpuMilli !== undefined) {
    if (p.gpu !== undefined && p.gpu !== 1) {
      at('gpuMilli', 'gpuMilli describes one device: use it with gpu: 1 or without gpu');
      return undefined;
    }
    gpuCount = 1;
    gpuMilli = p.gpuMilli;
  } else if (p.gpu !== undefined && p.gpu > 0) {
    if (p.gpu < 1) {
      gpuCount = 1;
      gpuMilli = Math.round(p.gpu * 1000);
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
      at('minComputeCapability', `"${p.minComputeCapability}" is not a compute capability (use sm_90, 9.0 or 90)`);
      return undefined;
    }
    cc = parsed;
  }
  return makePod(
    id,
    { cpuMilli: p.cpuMilli ?? 1000, memoryMiB: p.memoryMiB ?? 4096, gpuCount, gpuMilli, ...(p.gpuMemoryMiB === undefined ? {} : { gpuMemoryMiB: p.gpuMemoryMiB }) },
    {
      gpuModels: p.gpuModels ?? [],
      minComputeCapability: cc,
      priority: extra.priority ?? p.priority ?? 0,
      queue: extra.queue ?? p.queue ?? 'default',
      nodeSelector: p.nodeSelector ?? {},
      tolerations: (p.tolerations ?? []).map((t) => ({ ...t })),
      ...(extra.gang === undefined ? {} : { gang: extra.gang }),
    },
  );
}
