import { WORKLOAD_KINDS, objectRef, gangOf, isRecord, isTrainingKind, kindOf, namespaceOf, podSites, schedulerOf, type PodSite } from '../pod-specs.ts';
import type { FieldPath, KubeObject, Rule, RuleContext, RuleHit } from '../rule.ts';
import { perSet } from '../set-index.ts';

interface Member {
  readonly obj: KubeObject;
  readonly site: PodSite;
  readonly scheduler: string;
}

/** Per gang of the set (`namespace/key/name`): its schedulers, each with how many templates use it and the first one. */
function gangs(ctx: RuleContext): ReadonlyMap<string, ReadonlyMap<string, { count: number; first: Member }>> {
  return perSet(ctx, 'gang-schedulers', (objects) => {
    const m = new Map<string, Map<string, { count: number; first: Member }>>();
    for (const obj of objects) {
      if (!isRecord(obj)) continue;
      for (const site of podSites(obj)) {
        const g = gangOf(site);
        if (g === undefined) continue;
        const key = `${namespaceOf(obj)}/${g.key}/${g.name}`;
        const member = { obj, site, scheduler: schedulerOf(obj, site).name };
        let byScheduler = m.get(key);
        if (byScheduler === undefined) m.set(key, (byScheduler = new Map()));
        const e = byScheduler.get(member.scheduler);
        if (e === undefined) byScheduler.set(member.scheduler, { count: 1, first: member });
        else e.count++;
      }
    }
    return m;
  });
}

const where = (obj: KubeObject, s: PodSite): string => `${objectRef(obj)}${s.role === undefined ? '' : ` (${s.role})`}`;
const FIX =
  'one scheduler must place the whole gang all-or-nothing, otherwise each places its part alone and the gang deadlocks half-bound; give every member the same schedulerName (sits-scheduler for SITS gangs)';

export const gangSplitAcrossSchedulers: Rule = {
  id: 'gang-split-across-schedulers',
  severity: 'error',
  seed: '001 §2',
  title: 'Pods of one gang placed by different schedulers',
  rationale:
    'A gang is placed all-or-nothing by one scheduler; when some members name `sits-scheduler` and others `default-scheduler` (or Volcano), each ' +
    'scheduler binds its part alone, the gang holds GPUs half-placed and waits forever for the rest at the first collective. Checked across the ' +
    "set for pods sharing a gang (label `ai.sits2026.dev/pod-group`, Volcano's `scheduling.k8s.io/group-name`, the coscheduling plugin's " +
    "`scheduling.x-k8s.io/pod-group`, Kueue's `kueue.x-k8s.io/pod-group-name`) and within one multi-role job (PyTorchJob Master/Worker, " +
    'Volcano tasks, LeaderWorkerSet leader/workers). Give every member the same `schedulerName`.',
  kinds: WORKLOAD_KINDS,
  fixtures: {
    bad: `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: workers, namespace: ml}
spec:
  selector: {matchLabels: {app: workers}}
  replicas: 3
  template:
    metadata: {labels: {app: workers, ai.sits2026.dev/pod-group: llama}}
    spec:
      schedulerName: sits-scheduler
      containers: [{name: t, image: pytorch/pytorch:2.3, resources: {limits: {nvidia.com/gpu: 8}}}]
---
apiVersion: v1
kind: Pod
metadata:
  name: master
  namespace: ml
  labels: {ai.sits2026.dev/pod-group: llama}
spec:
  containers: [{name: t, image: pytorch/pytorch:2.3, resources: {limits: {nvidia.com/gpu: 8}}}]
---
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: bert, namespace: ml}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers: [{name: pytorch, image: pytorch/pytorch:2.3}]
    Worker:
      replicas: 3
      template:
        spec:
          schedulerName: sits-scheduler
          containers: [{name: pytorch, image: pytorch/pytorch:2.3}]
`,
    good: `apiVersion: ai.sits2026.dev/v1
kind: PodGroup
metadata: {name: llama, namespace: ml}
spec: {minMember: 4}
---
apiVersion: ai.sits2026.dev/v1
kind: PodGroup
metadata: {name: llama, namespace: other-ns}
spec: {minMember: 1}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: workers, namespace: ml}
spec:
  selector: {matchLabels: {app: workers}}
  replicas: 3
  template:
    metadata: {labels: {app: workers, ai.sits2026.dev/pod-group: llama}}
    spec:
      schedulerName: sits-scheduler
      containers: [{name: t, image: pytorch/pytorch:2.3}]
---
apiVersion: v1
kind: Pod
metadata:
  name: master
  namespace: ml
  labels: {ai.sits2026.dev/pod-group: llama}
spec:
  schedulerName: sits-scheduler
  containers: [{name: t, image: pytorch/pytorch:2.3}]
---
apiVersion: v1
kind: Pod
metadata:
  name: other
  namespace: other-ns
  labels: {ai.sits2026.dev/pod-group: llama}
spec:
  containers: [{name: t, image: pytorch/pytorch:2.3}]
`,
  },
  check(obj, ctx) {
    const hits: RuleHit[] = [];
    const seen = new Set<string>();
    const push = (message: string, path: FieldPath): void => {
      const k = JSON.stringify(path);
      if (seen.has(k)) return;
      seen.add(k);
      hits.push({ message, path });
    };
    const sites = podSites(obj);
    for (const s of sites) {
      const g = gangOf(s);
      if (g === undefined) continue;
      const schedulers = gangs(ctx).get(`${namespaceOf(obj)}/${g.key}/${g.name}`);
      const mine = schedulerOf(obj, s);
      const others = [...(schedulers ?? new Map<string, { count: number; first: Member }>()).entries()].filter(([name]) => name !== mine.name);
      const o = others[0]?.[1].first;
      if (o === undefined) continue;
      const count = others.reduce((acc, [, e]) => acc + e.count, 0);
      const names = others.map(([name]) => name).join(', ');
      push(
        `gang ${g.name} (${g.key}): this pod template is placed by ${mine.name} but ${where(o.obj, o.site)}${count > 1 ? ` and ${count - 1} more` : ''} by ${names}; ${FIX}`,
        mine.path ?? g.path,
      );
    }
    // One multi-role job is one gang even without a pod-group label.
    if (sites.length > 1 && (isTrainingKind(obj) || kindOf(obj) === 'LeaderWorkerSet')) {
      const scheds = sites.map((s) => schedulerOf(obj, s));
      const first = scheds[0];
      sites.forEach((s, i) => {
        const sc = scheds[i];
        if (first === undefined || sc === undefined || sc.name === first.name) return;
        push(
          `${s.role ?? 'this template'} is placed by ${sc.name} but ${sites[0]?.role ?? 'the first template'} by ${first.name}; ${FIX}`,
          sc.path ?? first.path ?? s.path,
        );
      });
    }
    return hits;
  },
};
