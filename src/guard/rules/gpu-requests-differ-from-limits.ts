import { GPU_RESOURCE } from '../../api/wire.ts';
import { compareQuantities, isQuantity, isWholeQuantity } from '../../api/quantity.ts';
import { WORKLOAD_KINDS, at, field, podSites } from '../pod-specs.ts';
import type { Rule, RuleHit } from '../rule.ts';

const asQuantity = (v: unknown): string | number | undefined => (typeof v === 'string' || typeof v === 'number' ? v : undefined);

export const gpuRequestsDifferFromLimits: Rule = {
  id: 'gpu-requests-differ-from-limits',
  severity: 'error',
  seed: '001 §2',
  title: 'nvidia.com/gpu requests without limits, requests ≠ limits, or a fractional GPU count',
  rationale:
    '`nvidia.com/gpu` is an extended resource: it cannot be overcommitted, so Kubernetes requires a limit, a request equal to it when both are ' +
    'set, and a whole number. The apiserver rejects anything else, and a template that breaks it fails only later, when its controller creates ' +
    'pods — one of the GPU-orchestration mismatches of seed 001 §2 between what a workload asks for and what the device plugin allocates. Set `resources.limits["nvidia.com/gpu"]: N` (the ' +
    'request then defaults to it); for a share of one GPU use annotation `ai.sits2026.dev/gpu-fraction` instead of a fraction.',
  kinds: WORKLOAD_KINDS,
  fixtures: {
    bad: `apiVersion: apps/v1
kind: Deployment
metadata: {name: serve, namespace: ml}
spec:
  selector: {matchLabels: {app: serve}}
  template:
    metadata: {labels: {app: serve}}
    spec:
      containers:
      - name: a
        image: vllm/vllm-openai:v0.6.0
        resources: {requests: {nvidia.com/gpu: 1}}
      - name: b
        image: vllm/vllm-openai:v0.6.0
        resources: {requests: {nvidia.com/gpu: 1}, limits: {nvidia.com/gpu: 2}}
---
apiVersion: v1
kind: Pod
metadata: {name: half, namespace: ml}
spec:
  containers:
  - {name: c, image: nvidia/cuda:12.2-base, resources: {limits: {nvidia.com/gpu: "500m"}}}
`,
    good: `apiVersion: apps/v1
kind: Deployment
metadata: {name: serve, namespace: ml}
spec:
  selector: {matchLabels: {app: serve}}
  template:
    metadata: {labels: {app: serve}}
    spec:
      containers:
      - name: a
        image: vllm/vllm-openai:v0.6.0
        readinessProbe: {httpGet: {path: /health, port: 8000}}
        resources: {limits: {nvidia.com/gpu: 1}}
      - name: b
        image: vllm/vllm-openai:v0.6.0
        readinessProbe: {httpGet: {path: /health, port: 8000}}
        resources: {requests: {nvidia.com/gpu: "2"}, limits: {nvidia.com/gpu: 2}}
`,
  },
  check(obj) {
    const hits: RuleHit[] = [];
    for (const s of podSites(obj)) {
      for (const c of s.containers) {
        const res = at(c.container, c.resourcesPath.slice(c.path.length));
        const req = asQuantity(field(field(res, 'requests'), GPU_RESOURCE));
        const lim = asQuantity(field(field(res, 'limits'), GPU_RESOURCE));
        const reqPath = [...c.resourcesPath, 'requests', GPU_RESOURCE];
        const limPath = [...c.resourcesPath, 'limits', GPU_RESOURCE];
        const name = c.name || '(unnamed)';
        for (const [v, p] of [
          [req, reqPath],
          [lim, limPath],
        ] as const) {
          // A value that is not a quantity at all is invalid-pod-template's finding.
          if (v !== undefined && isQuantity(v) && !isWholeQuantity(v))
            hits.push({
              message: `container ${name}: ${GPU_RESOURCE} ${JSON.stringify(v)} is not a whole number of GPUs (the apiserver rejects it); request whole GPUs, or one shared GPU with annotation ai.sits2026.dev/gpu-fraction`,
              path: p,
            });
        }
        if (req !== undefined && lim === undefined) {
          hits.push({
            message: `container ${name}: ${GPU_RESOURCE} is requested (${String(req)}) without a limit; extended resources need a limit (the apiserver rejects the pod): set limits["${GPU_RESOURCE}"]: ${String(req)}`,
            path: reqPath,
          });
        } else if (req !== undefined && lim !== undefined && compareQuantities(req, lim) !== 0 && isWholeQuantity(req) && isWholeQuantity(lim)) {
          hits.push({
            message: `container ${name}: ${GPU_RESOURCE} requests ${String(req)} ≠ limits ${String(lim)}; GPUs cannot be overcommitted (the apiserver rejects it): set both to the same count, or only the limit`,
            path: reqPath,
          });
        }
      }
    }
    return hits;
  },
};
