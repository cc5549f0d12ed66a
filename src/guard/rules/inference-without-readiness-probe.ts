import { inferenceEngine, podSites } from '../pod-specs.ts';
import type { Rule, RuleHit } from '../rule.ts';

export const inferenceWithoutReadinessProbe: Rule = {
  id: 'inference-without-readiness-probe',
  severity: 'warning',
  seed: '001 §4.4',
  title: 'Inference server (vLLM, TGI, Triton, …) without a readiness probe',
  rationale:
    'A serving container is "ready" the moment it starts unless it has a readiness probe, so the Service sends requests to a replica that is ' +
    'still loading tens of gigabytes of weights; a missing probe is one of the anti-patterns seed 001 §4.4 injects. Flagged for Deployments, ' +
    'StatefulSets, ReplicaSets and LeaderWorkerSets (the leader, which serves) whose container runs an inference engine (by image or ' +
    'command) without `readinessProbe`. ' +
    "Add a readiness probe on the engine's health endpoint (vLLM and TGI `/health`, Triton `/v2/health/ready`), and a `startupProbe` for long " +
    'loads; an InferenceService gets both from its controller.',
  kinds: ['Deployment', 'StatefulSet', 'ReplicaSet', 'LeaderWorkerSet'],
  fixtures: {
    bad: `apiVersion: apps/v1
kind: Deployment
metadata: {name: triton, namespace: ml}
spec:
  selector: {matchLabels: {app: triton}}
  template:
    metadata: {labels: {app: triton}}
    spec:
      containers:
      - name: triton
        image: nvcr.io/nvidia/tritonserver:24.05-py3
        command: [tritonserver, --model-repository=/models]
`,
    good: `apiVersion: apps/v1
kind: Deployment
metadata: {name: triton, namespace: ml}
spec:
  selector: {matchLabels: {app: triton}}
  template:
    metadata: {labels: {app: triton}}
    spec:
      containers:
      - name: triton
        image: nvcr.io/nvidia/tritonserver:24.05-py3
        readinessProbe: {httpGet: {path: /v2/health/ready, port: 8000}}
---
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: vllm, namespace: ml}
spec:
  replicas: 2
  leaderWorkerTemplate:
    size: 2
    leaderTemplate:
      spec:
        containers:
        - name: vllm-leader
          image: vllm/vllm-openai:v0.6.0
          command: [sh, -c, "ray start --head && vllm serve meta-llama/Llama-3.1-405B --tensor-parallel-size 8"]
          readinessProbe: {tcpSocket: {port: 8000}}
    workerTemplate:
      spec:
        containers:
        - name: vllm-worker
          image: vllm/vllm-openai:v0.6.0
          command: [sh, -c, "ray start --address=$(LWS_LEADER_ADDRESS):6379 --block"]
`,
  },
  check(obj) {
    const hits: RuleHit[] = [];
    const sites = podSites(obj);
    // A LeaderWorkerSet's leader serves; its workers only join the engine's process group (ray start, …).
    const serving = sites.some((s) => s.role === 'leader') ? sites.filter((s) => s.role === 'leader') : sites;
    for (const s of serving) {
      for (const c of s.containers) {
        if (c.init || c.container.readinessProbe !== undefined) continue;
        const engine = inferenceEngine(c);
        if (engine === undefined) continue;
        hits.push({
          message: `container ${c.name || '(unnamed)'} runs ${engine} without a readinessProbe: traffic reaches it while it is still loading the weights; add a readinessProbe on its health endpoint (vLLM/TGI /health, Triton /v2/health/ready) and a startupProbe for long loads`,
          path: c.path,
        });
      }
    }
    return hits;
  },
};
