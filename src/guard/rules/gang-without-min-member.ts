import { ANNOTATION, API_GROUP, LABEL } from '../../api/wire.ts';
import { WORKLOAD_KINDS, field, int, isRecord, isSitsKind, kindOf, namespaceOf, podSites, str } from '../pod-specs.ts';
import type { FieldPath, Rule, RuleHit } from '../rule.ts';
import { findObject } from '../set-index.ts';

const POD_GROUP_GROUPS = new Set([API_GROUP, 'scheduling.volcano.sh', 'scheduling.x-k8s.io', 'scheduling.sigs.k8s.io']);

export const gangWithoutMinMember: Rule = {
  id: 'gang-without-min-member',
  severity: 'warning',
  seed: '001 §3.1',
  title: 'Gang without minMember: a PodGroup without spec.minMember, or pod-group pods with neither a PodGroup nor a min-member annotation',
  rationale:
    'All-or-nothing placement needs to know how many pods make the gang; without it the scheduler cannot tell a complete gang from a partial ' +
    'one, and DDP ranks start alone and wait at the first barrier (seed 001 §3.1: a static world of `world_size` ranks). Flagged: a PodGroup ' +
    '(SITS, Volcano, coscheduling) without a positive integer `spec.minMember`, and pods labelled `ai.sits2026.dev/pod-group: <name>` when the ' +
    'set holds no PodGroup of that name in their namespace and the template has no valid `ai.sits2026.dev/min-member` annotation. Create the ' +
    'PodGroup with `spec.minMember` (and `spec.topology`), or annotate the pods with `ai.sits2026.dev/min-member: "<N>"`. TrainingJobs make ' +
    'their own PodGroup.',
  kinds: ['PodGroup', ...WORKLOAD_KINDS],
  fixtures: {
    bad: `apiVersion: ai.sits2026.dev/v1
kind: PodGroup
metadata: {name: llama, namespace: ml}
spec:
  queue: research
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: workers, namespace: ml}
spec:
  selector: {matchLabels: {app: workers}}
  replicas: 4
  template:
    metadata:
      labels: {app: workers, ai.sits2026.dev/pod-group: bert}
    spec:
      schedulerName: sits-scheduler
      containers: [{name: t, image: pytorch/pytorch:2.3}]
`,
    good: `apiVersion: ai.sits2026.dev/v1
kind: PodGroup
metadata: {name: llama, namespace: ml}
spec:
  minMember: 4
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: workers, namespace: ml}
spec:
  selector: {matchLabels: {app: workers}}
  replicas: 4
  template:
    metadata:
      labels: {app: workers, ai.sits2026.dev/pod-group: llama}
    spec:
      schedulerName: sits-scheduler
      containers: [{name: t, image: pytorch/pytorch:2.3}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: solo, namespace: ml}
spec:
  selector: {matchLabels: {app: solo}}
  replicas: 2
  template:
    metadata:
      labels: {app: solo, ai.sits2026.dev/pod-group: solo}
      annotations: {ai.sits2026.dev/min-member: "2"}
    spec:
      schedulerName: sits-scheduler
      containers: [{name: t, image: pytorch/pytorch:2.3}]
`,
  },
  check(obj, ctx) {
    if (kindOf(obj) === 'PodGroup') {
      const av = str(obj.apiVersion) ?? '';
      if (!POD_GROUP_GROUPS.has(av.slice(0, av.indexOf('/')))) return [];
      const mm = field(obj.spec, 'minMember');
      const n = typeof mm === 'number' && Number.isSafeInteger(mm) ? mm : undefined;
      if (n !== undefined && n >= 1) return [];
      const path: FieldPath = mm !== undefined ? ['spec', 'minMember'] : isRecord(obj.spec) ? ['spec'] : [];
      return [
        {
          message: `${mm === undefined ? 'no spec.minMember' : `spec.minMember ${JSON.stringify(mm)} is not a positive integer`}: the scheduler cannot tell a complete gang from a partial one; set spec.minMember to the number of pods that must start together`,
          path,
        },
      ];
    }
    if (isSitsKind(obj)) return [];
    const hits: RuleHit[] = [];
    for (const s of podSites(obj)) {
      const group = s.labels[LABEL.podGroup];
      if (group === undefined || group === '') continue;
      const ann = s.annotations[ANNOTATION.minMember];
      const base = s.metadataPath ?? s.path;
      if (ann !== undefined) {
        const n = int(ann);
        if (n === undefined || n < 1)
          hits.push({
            message: `annotation ${ANNOTATION.minMember}: ${JSON.stringify(ann)} is not a positive integer; set it to the number of pods that must start together`,
            path: [...base, 'annotations', ANNOTATION.minMember],
          });
        continue;
      }
      if (findObject(ctx, 'PodGroup', namespaceOf(obj), group) !== undefined) continue;
      hits.push({
        message: `pods of gang ${group} have no ${ANNOTATION.minMember} annotation and no PodGroup ${namespaceOf(obj)}/${group} is submitted with them: without minMember the gang cannot be placed all-or-nothing; create the PodGroup with spec.minMember or annotate the pod template with ${ANNOTATION.minMember}: "<N>"`,
        path: [...base, 'labels', LABEL.podGroup],
      });
    }
    return hits;
  },
};
