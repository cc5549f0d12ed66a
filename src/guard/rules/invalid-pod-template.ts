import { quantityToNano } from '../../api/quantity.ts';
import { WORKLOAD_KINDS, field, isRecord, isSitsKind, kindOf, podSites, type ContainerSite, type PodSite } from '../pod-specs.ts';
import type { FieldPath, KubeObject, Rule, RuleHit } from '../rule.ts';

/** Kinds whose pod template is `spec.template`. */
const TEMPLATE_AT_SPEC = new Set(['Deployment', 'StatefulSet', 'ReplicaSet', 'ReplicationController', 'DaemonSet']);
const LIST_FIELDS_OF_POD = ['containers', 'initContainers', 'volumes', 'tolerations', 'imagePullSecrets'] as const;
const LIST_FIELDS_OF_CONTAINER = ['command', 'args', 'env', 'envFrom', 'ports', 'volumeMounts'] as const;

/**
 * Extended resources (nvidia.com/gpu, amd.com/gpu, rdma/ib) are counted in whole devices: a name with a domain
 * outside kubernetes.io, as k8s.io/kubernetes IsExtendedResourceName reads it.
 */
export const isExtendedResource = (name: string): boolean =>
  name.includes('/') && !name.startsWith('kubernetes.io/') && !name.includes('.kubernetes.io/') && !name.startsWith('requests.');

const typeOf = (v: unknown): string => (Array.isArray(v) ? 'a list' : v === null ? 'null' : isRecord(v) ? 'a mapping' : `a ${typeof v}`);
/** The path as the apiserver prints it: `spec.containers[0].resources.limits[nvidia.com/gpu]`. */
const apiPath = (path: FieldPath): string =>
  path.reduce<string>((s, p) => (typeof p === 'number' || /[./]/.test(p) ? `${s}[${p}]` : s === '' ? p : `${s}.${p}`), '');
const at = (path: FieldPath, message: string): RuleHit => ({ message: `${apiPath(path)}: ${message}`, path });

function checkResources(c: ContainerSite, hits: RuleHit[]): void {
  const res = field(c.container, c.resourcesPath[c.resourcesPath.length - 1] as string);
  if (res === undefined) return;
  if (!isRecord(res)) {
    hits.push(at(c.resourcesPath, `must be a mapping (requests, limits), got ${typeOf(res)}`));
    return;
  }
  for (const which of ['requests', 'limits'] as const) {
    const list = res[which];
    if (list === undefined || list === null) continue;
    const listPath = [...c.resourcesPath, which];
    if (!isRecord(list)) {
      hits.push(at(listPath, `must be a mapping of resource name to quantity, got ${typeOf(list)}`));
      continue;
    }
    for (const [name, v] of Object.entries(list)) {
      const p = [...listPath, name];
      const nano = typeof v === 'string' || typeof v === 'number' ? quantityToNano(v) : undefined;
      if (nano === undefined)
        hits.push(at(p, `${JSON.stringify(v)} is not a quantity (the apiserver rejects it); write a number or a quantity such as 2, 500m or 16Gi`));
      else if (nano < 0n) hits.push(at(p, `${JSON.stringify(v)} is negative (the apiserver rejects it: must be greater than or equal to 0)`));
      else if (isExtendedResource(name) && nano % 1_000_000_000n !== 0n)
        hits.push(at(p, `${JSON.stringify(v)}: ${name} is an extended resource, counted in whole devices (the apiserver rejects it: must be an integer)`));
    }
  }
}

function checkContainerShape(c: unknown, path: FieldPath, hits: RuleHit[]): void {
  if (!isRecord(c)) {
    hits.push(at(path, `a container must be a mapping (name, image, …), got ${typeOf(c)}`));
    return;
  }
  if (typeof c.name !== 'string' || c.name === '')
    hits.push(
      at(
        c.name === undefined ? path : [...path, 'name'],
        c.name === undefined ? 'the container has no name (Required value)' : `name must be a non-empty string, got ${JSON.stringify(c.name)}`,
      ),
    );
  if (c.image !== undefined && typeof c.image !== 'string') hits.push(at([...path, 'image'], `image must be a string, got ${typeOf(c.image)}`));
  for (const f of LIST_FIELDS_OF_CONTAINER) {
    const v = c[f];
    if (v !== undefined && v !== null && !Array.isArray(v)) hits.push(at([...path, f], `must be a list, got ${typeOf(v)}`));
  }
}

function checkPodSpec(s: PodSite, containersRequired: boolean, hits: RuleHit[]): void {
  for (const f of LIST_FIELDS_OF_POD) {
    const v = s.spec[f];
    if (v !== undefined && v !== null && !Array.isArray(v))
      hits.push(at([...s.path, f], `must be a list, got ${typeOf(v)}${f === 'containers' ? ': write containers: [{name: …, image: …}]' : ''}`));
  }
  const cs = s.spec.containers;
  if ((cs === undefined || cs === null) && containersRequired)
    hits.push(at(s.path, 'the pod spec has no containers (Required value): a pod needs at least one'));
  else if (Array.isArray(cs) && cs.length === 0)
    hits.push(at([...s.path, 'containers'], 'the pod spec has no containers (Required value): a pod needs at least one'));
  for (const key of ['initContainers', 'containers'] as const) {
    const v = s.spec[key];
    if (Array.isArray(v)) v.forEach((c, i) => checkContainerShape(c, [...s.path, key, i], hits));
  }
}

/** Pod templates that are there but not a mapping, which podSites cannot read (it skips them). */
function unreadableTemplates(o: KubeObject, hits: RuleHit[]): void {
  const spec = field(o, 'spec');
  const kind = kindOf(o);
  const check = (tmpl: unknown, path: FieldPath): void => {
    if (tmpl === undefined || tmpl === null) return;
    if (!isRecord(tmpl)) hits.push(at(path, `a pod template must be a mapping (metadata, spec), got ${typeOf(tmpl)}`));
    else if (tmpl.spec !== undefined && !isRecord(tmpl.spec))
      hits.push(at([...path, 'spec'], `a pod spec must be a mapping (containers, volumes, …), got ${typeOf(tmpl.spec)}`));
  };
  if (kind === 'Pod' && spec !== undefined && !isRecord(spec))
    hits.push(at(['spec'], `a pod spec must be a mapping (containers, volumes, …), got ${typeOf(spec)}`));
  else if (TEMPLATE_AT_SPEC.has(kind) || (kind === 'Job' && !String(o.apiVersion).startsWith('batch.volcano.sh/')))
    check(field(spec, 'template'), ['spec', 'template']);
  else if (isSitsKind(o)) check(field(spec, 'podTemplate'), ['spec', 'podTemplate']);
}

export const invalidPodTemplate: Rule = {
  id: 'invalid-pod-template',
  severity: 'error',
  seed: '001 §2',
  title: 'A pod spec the apiserver rejects: containers not a list, a negative or unreadable quantity, a fractional GPU',
  rationale:
    'Every pod spec lint reads (a Pod, the template of a Deployment, StatefulSet, Job or CronJob, the replica templates of a PyTorchJob, ' +
    "a SITS kind's `podTemplate`) must have the shape the apiserver accepts: `containers` a non-empty list of mappings with a name, " +
    '`volumes`, `env`, `volumeMounts`, `command`, `args` lists, and every `resources.requests`/`limits` value a quantity that parses and ' +
    'is not negative; an extended resource (`nvidia.com/gpu`, `amd.com/gpu`, any name with a domain outside kubernetes.io) is a whole number. ' +
    'A template that breaks this is accepted inside a TrainingJob or a PyTorchJob (their CRDs pass pod templates through) and fails only ' +
    'when the controller creates the pods — a GPU request the device plugin can never allocate (seed 001 §2). Each finding names the field.',
  kinds: WORKLOAD_KINDS,
  fixtures: {
    bad: `apiVersion: v1
kind: Pod
metadata: {name: train, namespace: ml}
spec:
  containers:
  - name: trainer
    image: pytorch/pytorch:2.3
    resources: {limits: {nvidia.com/gpu: -2, memory: lots}}
---
apiVersion: batch/v1
kind: Job
metadata: {name: prep, namespace: ml}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: notalist
---
apiVersion: ai.sits2026.dev/v1
kind: TrainingJob
metadata: {name: llama, namespace: ml}
spec:
  replicas: 2
  podTemplate:
    spec:
      containers:
      - name: trainer
        image: pytorch/pytorch:2.3
        resources: {limits: {nvidia.com/gpu: "-1"}}
        volumeMounts: [{name: dshm, mountPath: /dev/shm}]
      volumes: [{name: dshm, emptyDir: {medium: Memory}}]
`,
    good: `apiVersion: v1
kind: Pod
metadata: {name: train, namespace: ml}
spec:
  containers:
  - name: trainer
    image: pytorch/pytorch:2.3
    resources: {limits: {nvidia.com/gpu: 2, memory: 64Gi, cpu: 500m}}
---
apiVersion: batch/v1
kind: Job
metadata: {name: prep, namespace: ml}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: prep, image: python:3.12}]
`,
  },
  check(obj) {
    const hits: RuleHit[] = [];
    unreadableTemplates(obj, hits);
    for (const s of podSites(obj)) {
      // A SITS kind's typed container is checked against its CRD schema (crd-schema).
      if (s.synthetic && isSitsKind(obj)) continue;
      // A KServe predictor names a model instead of containers; KServe builds them.
      if (!s.synthetic) checkPodSpec(s, !(kindOf(obj) === 'InferenceService' && !isSitsKind(obj)), hits);
      for (const c of s.containers) checkResources(c, hits);
    }
    return hits;
  },
};
