import { isResourceKind } from '../../api/kinds.ts';
import { validateManifest } from '../../api/validate.ts';
import { isRecord, isSitsKind } from '../pod-specs.ts';
import type { FieldPath, KubeObject, Rule, RuleHit } from '../rule.ts';

export const SITS_KINDS = ['TrainingJob', 'InferenceService', 'BatchInferenceJob', 'DataPipeline', 'Queue', 'PodGroup'] as const;

/**
 * An apiserver field path (`spec.replicas`, `spec.resources[nvidia.com/gpu]`, `spec.stages[2].name`) as a lint
 * field path. A bracket is a list index only where the object has a list: map keys may be digits too.
 */
export function parseApiPath(obj: unknown, path: string): FieldPath {
  const out: (string | number)[] = [];
  let cur: unknown = obj;
  const re = /([^.[\]]+)|\[([^\]]*)\]/g;
  for (let m = re.exec(path); m !== null; m = re.exec(path)) {
    const key = m[1] ?? m[2] ?? '';
    const step: string | number = m[2] !== undefined && Array.isArray(cur) && /^\d+$/.test(key) ? Number(key) : key;
    out.push(step);
    cur = typeof step === 'number' ? (Array.isArray(cur) ? cur[step] : undefined) : isRecord(cur) ? cur[step] : undefined;
  }
  return out;
}

/** The longest prefix of `path` that exists in `obj`: a missing (Required) field is reported at its parent. */
function existingPrefix(obj: unknown, path: FieldPath): FieldPath {
  let cur: unknown = obj;
  let n = 0;
  for (const k of path) {
    const next = typeof k === 'number' ? (Array.isArray(cur) ? cur[k] : undefined) : isRecord(cur) ? cur[k] : undefined;
    if (next === undefined) break;
    cur = next;
    n++;
  }
  return path.slice(0, n);
}

export const crdSchema: Rule = {
  id: 'crd-schema',
  severity: 'error',
  seed: '000 §1',
  title: 'A SITS object (TrainingJob, InferenceService, …) that its CustomResourceDefinition rejects',
  rationale:
    'The SITS kinds (`ai.sits2026.dev/v1` TrainingJob, InferenceService, BatchInferenceJob, DataPipeline, Queue, PodGroup) are checked ' +
    'against the same TypeBox schema and CEL rules their CRDs are generated from (`src/api/schema`), as the apiserver would: types, ' +
    'ranges (`replicas: -8`), quantities (`nvidia.com/gpu: "lots"`), enums, unknown fields, required fields and the cross-field rules. ' +
    "Each violation is one finding at its field, `<field path>: <the apiserver's message>`, so `kubectl apply` does not have to be " +
    'the first to say it. Fix the field; `docs/crds.md` lists every field.',
  kinds: SITS_KINDS,
  fixtures: {
    bad: `apiVersion: ai.sits2026.dev/v1
kind: TrainingJob
metadata: {name: llama, namespace: ml}
spec:
  replicas: -8
  resources: {nvidia.com/gpu: lots}
  container: {image: pytorch/pytorch:2.3}
`,
    good: `apiVersion: ai.sits2026.dev/v1
kind: TrainingJob
metadata: {name: llama, namespace: ml}
spec:
  replicas: 8
  gpusPerReplica: 1
  resources: {cpu: "4"}
  podTemplate:
    spec:
      containers: [{name: trainer, image: pytorch/pytorch:2.3, volumeMounts: [{name: shm, mountPath: /dev/shm}]}]
      volumes: [{name: shm, emptyDir: {medium: Memory}}]
`,
  },
  check(obj: KubeObject) {
    // Another group's kind of the same name (KServe's InferenceService) is not ours to judge; a wrong version of
    // our group (ai.sits2026.dev/v2) is, at apiVersion.
    if (!isSitsKind(obj) || !isResourceKind(obj.kind)) return [];
    const r = validateManifest(obj);
    if (r.ok) return [];
    const hits: RuleHit[] = [];
    for (const e of r.errors) {
      const full = parseApiPath(obj, e.path);
      const where = existingPrefix(obj, full);
      hits.push({ message: `${e.path === '' ? '(object)' : e.path}: ${e.message}`, path: where });
    }
    return hits;
  },
};
