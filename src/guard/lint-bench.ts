/**
 * The `sits lint` benchmark of issue 16 (≤ 10 s for 10,000 manifests): deterministic, realistic manifests
 * (Deployments, TrainingJobs, Services, PriorityClasses, Pods, HPAs, PodGroups; some with the seed's mistakes,
 * some helm-template streams, some JSON Lists) generated as text in memory, then parse + lint + format timed
 * end to end. The clock is injected so the caller (`sits bench webhook`) owns time.
 */
import { stringify } from 'yaml';
import { seededRng, type Rng } from '../core/ports.ts';
import { formatText } from './format.ts';
import { lintSources, type InputSource } from './lint-files.ts';
import type { Rule } from './rule.ts';
import { RULES } from './rules/index.ts';

export interface LintBenchOptions {
  readonly manifests: number;
  readonly seed: number;
  /** Milliseconds from any origin (default performance.now). */
  readonly now?: () => number;
  readonly rules?: readonly Rule[];
}

export interface LintBenchResult {
  readonly manifests: number;
  readonly seconds: number;
  readonly manifestsPerSec: number;
  /** What the run found, so a benchmark that stopped finding anything is visible. */
  readonly findings: number;
  readonly inputs: number;
}

type M = Record<string, unknown>;

const pick = <T>(rng: Rng, xs: readonly T[]): T => xs[rng.int(xs.length)] as T;
const chance = (rng: Rng, p: number): boolean => rng.next() < p;

const IMAGES = [
  'registry.sits2026.dev/ml/pytorch:2.3-cuda12.1',
  'nvcr.io/nvidia/tritonserver:24.05-py3',
  'vllm/vllm-openai:v0.5.4',
  'registry.sits2026.dev/web/api:1.8.2',
];
const MODELS = ['NVIDIA-H100-80GB-HBM3', 'NVIDIA-A100-SXM4-80GB', 'NVIDIA-L4'];

function env(rng: Rng): M[] {
  const out: M[] = [{ name: 'NCCL_DEBUG', value: pick(rng, ['WARN', 'INFO']) }];
  if (chance(rng, 0.15)) out.push({ name: 'CUDA_VISIBLE_DEVICES', value: '0,1' });
  if (chance(rng, 0.15)) out.push({ name: 'NCCL_ASYNC_ERROR_HANDLING', value: '1' }, { name: 'NCCL_TIMEOUT', value: '60' });
  if (chance(rng, 0.1)) out.push({ name: 'NCCL_IB_DISABLE', value: '1' });
  if (chance(rng, 0.3)) out.push({ name: 'NUM_WORKERS', value: String(pick(rng, [0, 1, 2, 4, 8])) });
  return out;
}

function container(rng: Rng, name: string, gpus: number, training: boolean): M {
  const cpu = pick(rng, [1, 2, 4, 8]);
  const limits: M = { cpu: String(cpu), memory: `${pick(rng, [4, 16, 64])}Gi` };
  const requests: M = { ...limits };
  if (gpus > 0) {
    limits['nvidia.com/gpu'] = String(gpus);
    requests['nvidia.com/gpu'] = String(chance(rng, 0.1) ? Math.max(0, gpus - 1) : gpus);
  }
  const command = training
    ? ['torchrun', `--nproc_per_node=${Math.max(1, gpus)}`, 'train.py', '--num-workers', String(pick(rng, [0, 1, 2, 4, 8])), '--checkpoint-dir', '/ckpt']
    : ['python', '-m', 'serve', '--port', '8080'];
  return {
    name,
    image: pick(rng, IMAGES),
    command,
    env: env(rng),
    ports: [{ containerPort: training ? 29500 : 8080, name: training ? 'rdzv' : 'http' }],
    resources: { limits, requests },
    volumeMounts: [{ name: 'ckpt', mountPath: '/ckpt' }, ...(chance(rng, 0.3) ? [{ name: 'weights', mountPath: '/models', readOnly: true }] : [])],
  };
}

function podSpec(rng: Rng, gpus: number, training: boolean, name: string): M {
  const spec: M = {
    ...(chance(rng, 0.8) ? { schedulerName: chance(rng, 0.9) ? 'sits-scheduler' : 'default-scheduler' } : {}),
    containers: [container(rng, 'main', gpus, training)],
    volumes: [
      chance(rng, 0.5) ? { name: 'ckpt', emptyDir: {} } : { name: 'ckpt', persistentVolumeClaim: { claimName: `${name}-ckpt` } },
      ...(chance(rng, 0.3) ? [{ name: 'weights', nfs: { server: 'nfs.storage.svc', path: '/models/llama' } }] : []),
    ],
  };
  if (chance(rng, 0.2))
    spec.nodeSelector = {
      [pick(rng, ['topology.kubernetes.io/zone', 'sits2026.dev/rack', 'nvidia.com/gpu.product'])]: pick(rng, ['zone-a', 'rack-3', MODELS[0] as string]),
    };
  if (chance(rng, 0.3))
    spec.affinity = {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [{ matchExpressions: [{ key: 'nvidia.com/gpu.product', operator: 'In', values: [pick(rng, MODELS)] }] }],
        },
      },
    };
  return spec;
}

const meta = (name: string, ns: string, rng: Rng, extra: M = {}): M => ({
  name,
  namespace: ns,
  labels: { app: name, team: pick(rng, ['nlp', 'vision', 'recsys', 'platform']), 'app.kubernetes.io/managed-by': 'Helm' },
  ...(chance(rng, 0.05) ? { annotations: { 'lint.sits2026.dev/disable': 'all' } } : {}),
  ...extra,
});

/** One manifest of a kind chosen by weight; `i` makes names unique. */
export function benchManifest(rng: Rng, i: number): M {
  const ns = `team-${i % 17}`;
  const r = rng.next();
  if (r < 0.25) {
    const training = chance(rng, 0.2);
    const name = `${training ? 'ddp' : 'infer'}-${i}`;
    const gpus = pick(rng, [0, 1, 1, 2, 4, 8]);
    return {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: meta(name, ns, rng),
      spec: {
        replicas: pick(rng, [1, 2, 4, 8]),
        selector: { matchLabels: { app: name } },
        template: { metadata: { labels: { app: name } }, spec: podSpec(rng, gpus, training, name) },
      },
    };
  }
  if (r < 0.45) {
    const name = `train-${i}`;
    const replicas = pick(rng, [1, 2, 4, 8, 16]);
    const gpus = pick(rng, [1, 2, 8]);
    return {
      apiVersion: 'ai.sits2026.dev/v1',
      kind: 'TrainingJob',
      metadata: meta(name, ns, rng),
      spec: {
        topology: { strategy: 'ring-allreduce', ...(chance(rng, 0.5) ? { requiredLevel: pick(rng, ['rack', 'block']) } : {}) },
        replicas,
        gpusPerReplica: gpus,
        resources: { 'nvidia.com/gpu': gpus, cpu: gpus * 4, memory: `${gpus * 64}Gi` },
        ...(chance(rng, 0.5) ? { gpu: { allowedModels: [pick(rng, MODELS)] } } : {}),
        queue: pick(rng, ['research', 'prod', 'batch']),
        ...(chance(rng, 0.4) ? { priorityClassName: 'training-high' } : {}),
        podTemplate: { metadata: { labels: { app: name } }, spec: podSpec(rng, gpus, true, name) },
      },
    };
  }
  if (r < 0.6) {
    const name = `rdzv-${i}`;
    const headless = chance(rng, 0.6);
    return {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: meta(name, ns, rng),
      spec: {
        ...(headless ? { clusterIP: 'None' } : { type: 'ClusterIP' }),
        selector: { app: `train-${i - 1}` },
        ports: [{ name: 'rdzv', port: 29500, targetPort: 29500 }],
      },
    };
  }
  if (r < 0.67) {
    return {
      apiVersion: 'scheduling.k8s.io/v1',
      kind: 'PriorityClass',
      metadata: { name: `prio-${i}` },
      value: pick(rng, [1000, 100000, 1000000]),
      preemptionPolicy: pick(rng, ['PreemptLowerPriority', 'Never']),
      globalDefault: false,
      description: 'training priority',
    };
  }
  if (r < 0.9) {
    const name = `pod-${i}`;
    return {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: meta(name, ns, rng),
      spec: { ...podSpec(rng, pick(rng, [0, 1, 2, 4]), chance(rng, 0.4), name), restartPolicy: 'Never' },
    };
  }
  if (r < 0.95) {
    return {
      apiVersion: 'autoscaling/v2',
      kind: 'HorizontalPodAutoscaler',
      metadata: meta(`hpa-${i}`, ns, rng),
      spec: {
        scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: `${pick(rng, ['ddp', 'infer'])}-${Math.max(0, i - 3)}` },
        minReplicas: 1,
        maxReplicas: 8,
        metrics: [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 70 } } }],
      },
    };
  }
  return {
    apiVersion: 'ai.sits2026.dev/v1',
    kind: 'PodGroup',
    metadata: meta(`pg-${i}`, ns, rng),
    spec: { ...(chance(rng, 0.7) ? { minMember: pick(rng, [2, 4, 8]) } : {}), queue: 'research' },
  };
}

const PER_INPUT = 50;

/**
 * `count` manifests in inputs of 50: most as plain multi-document YAML files, every fifth input as a `helm template`
 * stream (`# Source:` comments), every tenth as a JSON `kind: List`. Same seed, same text.
 */
export function benchInputs(count: number, seed: number): InputSource[] {
  const rng = seededRng(seed);
  const inputs: InputSource[] = [];
  for (let start = 0, n = 0; start < count; start += PER_INPUT, n++) {
    const objs = Array.from({ length: Math.min(PER_INPUT, count - start) }, (_, k) => benchManifest(rng, start + k));
    let text: string;
    let file: string;
    if (n % 10 === 9) {
      file = `bench/list-${n}.json`;
      text = JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objs }, null, 2);
    } else if (n % 5 === 4) {
      file = `bench/helm-${n}.yaml`;
      text = objs.map((o) => `---\n# Source: sits-bench/templates/${String(o.kind).toLowerCase()}.yaml\n${stringify(o)}`).join('');
    } else {
      file = `bench/manifests-${n}.yaml`;
      text = objs.map((o) => stringify(o)).join('---\n');
    }
    inputs.push({ file, text, bytes: Buffer.byteLength(text) });
  }
  return inputs;
}

export function runLintBench(opts: LintBenchOptions): LintBenchResult {
  const now = opts.now ?? (() => performance.now());
  const inputs = benchInputs(opts.manifests, opts.seed);
  const t0 = now();
  const report = lintSources(inputs, opts.rules ?? RULES, { cluster: { schedulerNames: ['sits-scheduler'], gpuModels: MODELS, rdma: true } });
  const out = formatText(report.findings, report);
  const seconds = (now() - t0) / 1000;
  if (report.objects !== opts.manifests || out === '') throw new Error(`lint bench: linted ${report.objects} of ${opts.manifests} manifests`);
  return {
    manifests: opts.manifests,
    seconds,
    manifestsPerSec: seconds > 0 ? Math.round(opts.manifests / seconds) : 0,
    findings: report.findings.length,
    inputs: inputs.length,
  };
}
