import { WORKLOAD_KINDS, envOf, field, int, isSitsKind, kindOf, podSites, type ContainerSite } from '../pod-specs.ts';
import type { FieldPath, KubeObject, Rule, RuleHit } from '../rule.ts';

/** Collective timeouts below this turn a link hiccup into a crash: the seed's own example uses 120 s (001 §3.2). */
export const MIN_NCCL_TIMEOUT_SECONDS = 120;

interface Setting {
  readonly value: string;
  readonly what: string;
  readonly path: FieldPath;
}

/**
 * The NCCL settings the container runs with: its env, on top of what a TrainingJob injects from spec.nccl
 * (asyncErrorHandling true and timeoutSeconds 1800 by default) into its trainer container.
 */
function ncclSettings(obj: KubeObject, c: ContainerSite): ReadonlyMap<string, Setting> {
  const out = new Map<string, Setting>();
  if (kindOf(obj) === 'TrainingJob' && isSitsKind(obj) && c.implied !== undefined) {
    const nccl = field(obj.spec, 'nccl');
    const asyncOn = field(nccl, 'asyncErrorHandling') !== false;
    const t = int(field(nccl, 'timeoutSeconds'));
    if (asyncOn)
      out.set('NCCL_ASYNC_ERROR_HANDLING', {
        value: '1',
        what: 'spec.nccl.asyncErrorHandling',
        path: field(nccl, 'asyncErrorHandling') === undefined ? ['spec'] : ['spec', 'nccl', 'asyncErrorHandling'],
      });
    out.set('NCCL_TIMEOUT', {
      value: String(t ?? 1800),
      what: 'spec.nccl.timeoutSeconds',
      path: t === undefined ? ['spec'] : ['spec', 'nccl', 'timeoutSeconds'],
    });
  }
  for (const e of envOf(c).values()) if (e.value !== undefined) out.set(e.name, { value: e.value.trim(), what: e.name, path: e.valuePath });
  return out;
}

export const ncclFailFastTimeout: Rule = {
  id: 'nccl-fail-fast-timeout',
  severity: 'warning',
  seed: '001 §3.2',
  title: 'NCCL fail-fast error handling with a collective timeout too short to ride out a link hiccup',
  rationale:
    '`NCCL_ASYNC_ERROR_HANDLING=1` (or `TORCH_NCCL_ASYNC_ERROR_HANDLING=1|3`, or `NCCL_BLOCKING_WAIT=1`) makes a collective that exceeds ' +
    '`NCCL_TIMEOUT` abort the process instead of hanging — right, as long as the timeout outlasts a transient RDMA link flap or QP reset. ' +
    `With 0 or a small value the process is killed (SIGABRT), the container exits non-zero and the pod is restarted or evicted over and over ` +
    `(seed 001 §3.2). Flagged: fail-fast handling on and \`NCCL_TIMEOUT\` below ${MIN_NCCL_TIMEOUT_SECONDS} s (the seed's own example value), ` +
    "from container env or a TrainingJob's `spec.nccl`. (Seed 001 §4.2 recommends `NCCL_BLOCKING_WAIT=1` on the critical path; that is " +
    'fine with a long enough timeout.) Keep the fail-fast handling and give collectives minutes (a TrainingJob defaults to ' +
    '`spec.nccl.timeoutSeconds: 1800`).',
  kinds: WORKLOAD_KINDS,
  fixtures: {
    bad: `apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: bert, namespace: ml}
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 4
      template:
        spec:
          containers:
          - name: pytorch
            image: pytorch/pytorch:2.3
            env:
            - {name: NCCL_ASYNC_ERROR_HANDLING, value: "1"}
            - {name: NCCL_TIMEOUT, value: "30"}
---
apiVersion: ai.sits2026.dev/v1
kind: TrainingJob
metadata: {name: llama, namespace: ml}
spec:
  replicas: 4
  nccl: {timeoutSeconds: 20}
  container: {image: pytorch/pytorch:2.3}
`,
    good: `apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: bert, namespace: ml}
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 4
      template:
        spec:
          containers:
          - name: pytorch
            image: pytorch/pytorch:2.3
            env:
            - {name: NCCL_ASYNC_ERROR_HANDLING, value: "1"}
            - {name: NCCL_TIMEOUT, value: "600"}
            volumeMounts: [{name: dshm, mountPath: /dev/shm}]
          volumes: [{name: dshm, emptyDir: {medium: Memory}}]
---
apiVersion: ai.sits2026.dev/v1
kind: TrainingJob
metadata: {name: llama, namespace: ml}
spec:
  replicas: 4
  nccl: {timeoutSeconds: 20, asyncErrorHandling: false}
  container: {image: pytorch/pytorch:2.3}
`,
  },
  check(obj) {
    const hits: RuleHit[] = [];
    for (const s of podSites(obj)) {
      for (const c of s.containers) {
        const set = ncclSettings(obj, c);
        const on = (name: string, values: readonly string[]): Setting | undefined => {
          const v = set.get(name);
          return v !== undefined && values.includes(v.value) ? v : undefined;
        };
        const failFast =
          on('TORCH_NCCL_ASYNC_ERROR_HANDLING', ['1', '3']) ??
          on('NCCL_ASYNC_ERROR_HANDLING', ['1', '3']) ??
          on('TORCH_NCCL_BLOCKING_WAIT', ['1']) ??
          on('NCCL_BLOCKING_WAIT', ['1']);
        const t = set.get('NCCL_TIMEOUT');
        const seconds = t === undefined ? undefined : int(t.value);
        if (failFast === undefined || t === undefined || seconds === undefined || seconds >= MIN_NCCL_TIMEOUT_SECONDS) continue;
        hits.push({
          message: `${t.what}=${seconds} s with ${failFast.what}=${failFast.value}: a collective stalled longer than ${seconds} s by an RDMA link flap aborts the process, and the pod is restarted or evicted again and again; keep the fail-fast handling but set the timeout to at least ${MIN_NCCL_TIMEOUT_SECONDS} s (a TrainingJob defaults to 1800 s)`,
          path: t.path,
        });
      }
    }
    return hits;
  },
};
