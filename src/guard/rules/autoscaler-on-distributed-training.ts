import { field, int, isElastic, isTrainingKind, kindOf, nameOf, namespaceOf, objectDistributedSignal, str } from '../pod-specs.ts';
import type { FieldPath, KubeObject, Rule, RuleHit } from '../rule.ts';
import { findObject } from '../set-index.ts';

const SCALABLE = new Set(['Deployment', 'StatefulSet', 'ReplicaSet', 'ReplicationController']);

/** An autoscaler on an elastic TrainingJob must stay inside its minReplicas..maxReplicas (the CRD rejects replicas outside). */
function rangeHits(scaler: KubeObject, job: KubeObject): RuleHit[] {
  const keda = kindOf(scaler) === 'ScaledObject';
  const [minKey, maxKey] = keda ? ['minReplicaCount', 'maxReplicaCount'] : ['minReplicas', 'maxReplicas'];
  const lo = int(field(job.spec, 'minReplicas'));
  const hi = int(field(job.spec, 'maxReplicas'));
  const sMin = int(field(scaler.spec, minKey));
  const sMax = int(field(scaler.spec, maxKey));
  const hits: RuleHit[] = [];
  const hit = (key: string, v: number, bound: string, b: number, path: FieldPath): void => {
    hits.push({
      message: `${key} ${v} is outside the elastic range of TrainingJob ${nameOf(job)} (${bound} ${b}): the scale request is rejected and the autoscaler keeps retrying; keep ${minKey}..${maxKey} within spec.minReplicas..spec.maxReplicas`,
      path,
    });
  };
  if (sMax !== undefined && hi !== undefined && sMax > hi) hit(maxKey, sMax, 'maxReplicas', hi, ['spec', maxKey]);
  if (sMin !== undefined && lo !== undefined && sMin > 0 && sMin < lo) hit(minKey, sMin, 'minReplicas', lo, ['spec', minKey]);
  return hits;
}

export const autoscalerOnDistributedTraining: Rule = {
  id: 'autoscaler-on-distributed-training',
  severity: 'warning',
  seed: '001 §3.1',
  title: 'HPA or KEDA ScaledObject scaling DDP training that is not elastic',
  rationale:
    'A HorizontalPodAutoscaler (or KEDA ScaledObject) adds and removes pods while the job runs; DDP has a static world size: a new pod cannot join ' +
    'the initialised process group and times out at the barrier, and a removed pod dies inside an all-reduce and deadlocks the others (seed 001 ' +
    '§3.1). Flagged when the scale target is in the same set and is a non-elastic TrainingJob (no minReplicas/maxReplicas), a Kubeflow job ' +
    'without an elasticPolicy, or a Deployment/StatefulSet/ReplicaSet running distributed training. Do not autoscale training: make a ' +
    'TrainingJob elastic with `spec.minReplicas`/`spec.maxReplicas` (SITS grows and shrinks it as whole gang attempts), or a PyTorchJob with an ' +
    '`elasticPolicy`; an autoscaler on an elastic TrainingJob must keep its bounds inside `minReplicas..maxReplicas` (flagged otherwise: ' +
    'the CRD rejects replicas outside that range).',
  kinds: ['HorizontalPodAutoscaler', 'ScaledObject'],
  fixtures: {
    bad: `apiVersion: ai.sits2026.dev/v1
kind: TrainingJob
metadata: {name: llama, namespace: ml}
spec:
  replicas: 4
  container: {image: pytorch/pytorch:2.3}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: llama, namespace: ml}
spec:
  scaleTargetRef: {apiVersion: ai.sits2026.dev/v1, kind: TrainingJob, name: llama}
  minReplicas: 2
  maxReplicas: 8
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: ddp, namespace: ml}
spec:
  selector: {matchLabels: {app: ddp}}
  replicas: 2
  template:
    metadata: {labels: {app: ddp}}
    spec:
      containers:
      - name: t
        image: pytorch/pytorch:2.3
        env: [{name: MASTER_ADDR, value: ddp-0.ddp}]
---
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: ddp, namespace: ml}
spec:
  scaleTargetRef: {kind: StatefulSet, name: ddp}
---
apiVersion: ai.sits2026.dev/v1
kind: TrainingJob
metadata: {name: elastic, namespace: ml}
spec:
  replicas: 4
  minReplicas: 2
  maxReplicas: 8
  container: {image: pytorch/pytorch:2.3}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: elastic, namespace: ml}
spec:
  scaleTargetRef: {apiVersion: ai.sits2026.dev/v1, kind: TrainingJob, name: elastic}
  minReplicas: 2
  maxReplicas: 16
`,
    good: `apiVersion: ai.sits2026.dev/v1
kind: TrainingJob
metadata: {name: llama, namespace: ml}
spec:
  replicas: 4
  minReplicas: 2
  maxReplicas: 8
  container: {image: pytorch/pytorch:2.3}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: llama, namespace: ml}
spec:
  scaleTargetRef: {apiVersion: ai.sits2026.dev/v1, kind: TrainingJob, name: llama}
  minReplicas: 2
  maxReplicas: 8
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: ml}
spec:
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers: [{name: api, image: registry.example/api:1.0}]
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: api, namespace: ml}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: api}
  maxReplicas: 8
`,
  },
  check(obj, ctx) {
    const ref = field(obj.spec, 'scaleTargetRef');
    const name = str(field(ref, 'name'));
    // KEDA's scaleTargetRef.kind defaults to Deployment; the HPA's is required.
    const kind = str(field(ref, 'kind')) ?? (kindOf(obj) === 'ScaledObject' ? 'Deployment' : undefined);
    if (name === undefined || kind === undefined) return [];
    const target = findObject(ctx, kind, namespaceOf(obj), name);
    if (target === undefined) return [];
    let why: string | undefined;
    if (kind === 'TrainingJob' && isElastic(target)) return rangeHits(obj, target);
    if (isTrainingKind(target)) {
      if (!isElastic(target))
        why = kind === 'TrainingJob' ? 'a TrainingJob without minReplicas/maxReplicas (not elastic)' : `a ${kind} without an elasticPolicy`;
    } else if (SCALABLE.has(kind)) {
      const sig = objectDistributedSignal(target);
      if (sig !== undefined) why = `a ${kind} that ${sig.why} (distributed training)`;
    }
    if (why === undefined) return [];
    const fix =
      kind === 'TrainingJob'
        ? 'remove the autoscaler and make the TrainingJob elastic with spec.minReplicas/spec.maxReplicas'
        : 'remove the autoscaler; run the training as an elastic TrainingJob (spec.minReplicas/maxReplicas)';
    return [
      {
        message: `${kindOf(obj)} scales ${kind} ${name}, ${why}: pods added mid-run cannot join the DDP process group and pods removed mid all-reduce deadlock the rest; ${fix}`,
        path: ['spec', 'scaleTargetRef', 'name'],
      },
    ];
  },
};
