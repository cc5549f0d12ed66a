/**
 * Every pod spec an object carries, with its field path, and small readers over them (containers, env, argv,
 * resources, GPUs, replicas) for the guard-rail rules. Nothing about the input is trusted: a field of the wrong
 * type reads as absent, never throws. Results are cached per object (objects are not mutated while linted), so
 * the rules that all look at the same pod specs extract them once.
 */
import { quantityToMilli, quantityToNano } from '../api/quantity.ts';
import { ANNOTATION, API_GROUP, GPU_RESOURCE, LABEL, SCHEDULER_NAME } from '../api/wire.ts';
import type { FieldPath, KubeObject } from './rule.ts';

export type Json = Readonly<Record<string, unknown>>;

export const isRecord = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
export const field = (o: unknown, key: string): unknown => (isRecord(o) ? o[key] : undefined);
export const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
export const list = (v: unknown): readonly unknown[] => (Array.isArray(v) ? v : []);

/** The value at a path, or undefined when any step is missing or of the wrong type. */
export function at(o: unknown, path: FieldPath): unknown {
  let cur = o;
  for (const k of path) {
    if (typeof k === 'number') cur = Array.isArray(cur) ? cur[k] : undefined;
    else cur = isRecord(cur) ? cur[k] : undefined;
    if (cur === undefined) return undefined;
  }
  return cur;
}

/** A non-negative integer from a number or a decimal string ("3"); undefined otherwise. */
export function int(v: unknown): number | undefined {
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^\s*\d+\s*$/.test(v) ? Number(v) : Number.NaN;
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

/** The string entries of a map (labels, annotations, nodeSelector); other values are dropped. */
export function stringMap(v: unknown): Readonly<Record<string, string>> {
  if (!isRecord(v)) return {};
  const out: Record<string, string> = {};
  for (const [k, x] of Object.entries(v)) if (typeof x === 'string') out[k] = x;
  return out;
}

export const kindOf = (o: KubeObject): string => str(o.kind) ?? '';
export const nameOf = (o: KubeObject): string => str(field(o.metadata, 'name')) ?? str(field(o.metadata, 'generateName')) ?? '';
/** The object's namespace; an object that names none lands in `default` (what `kubectl apply` does without -n). */
export const namespaceOf = (o: KubeObject): string => str(field(o.metadata, 'namespace')) ?? 'default';
export const labelsOf = (o: KubeObject): Readonly<Record<string, string>> => stringMap(field(o.metadata, 'labels'));
export const annotationsOf = (o: KubeObject): Readonly<Record<string, string>> => stringMap(field(o.metadata, 'annotations'));
/** `Kind ns/name`, how messages name another object. */
export const objectRef = (o: KubeObject): string => `${kindOf(o)} ${namespaceOf(o)}/${nameOf(o)}`;
const groupOf = (o: KubeObject): string => {
  const av = str(o.apiVersion) ?? '';
  return av.includes('/') ? av.slice(0, av.indexOf('/')) : '';
};

/** One container of a pod spec, with where it is written. */
export interface ContainerSite {
  readonly container: Json;
  readonly path: FieldPath;
  readonly name: string;
  readonly init: boolean;
  /** Path of the container's ResourceRequirements (`resources`; `resourcesPerNode` for a TrainJob). */
  readonly resourcesPath: FieldPath;
  /**
   * SITS kinds: the per-replica resource list (`spec.resources`, requests = limits) and GPU count
   * (`spec.gpusPerReplica`, `gpusPerWorker`) the controller puts on this container when its own resources leave them out.
   */
  readonly implied?: { readonly resources: Json; readonly path: FieldPath; readonly gpus?: { readonly count: number; readonly path: FieldPath } };
}

/** One pod template (or the pod itself) inside an object. */
export interface PodSite {
  /** Path of the pod spec; for SITS kinds with a typed `container` (no pod spec of their own), the path of that spec's parent. */
  readonly path: FieldPath;
  readonly spec: Json;
  /** True when the containers come from a typed `container`/`trainer` field: there are no volumes, selectors or affinity. */
  readonly synthetic: boolean;
  /** Path of the template's metadata (labels, annotations), when it has one. */
  readonly metadataPath: FieldPath | undefined;
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
  /** Pods made from this template; undefined when the object does not say (a DaemonSet: one per node). */
  readonly replicas: number | undefined;
  /** Replica type or task name of multi-role kinds (Master, Worker, a Volcano task). */
  readonly role: string | undefined;
  readonly containers: readonly ContainerSite[];
}

export const WORKLOAD_KINDS = [
  'Pod',
  'Deployment',
  'StatefulSet',
  'ReplicaSet',
  'ReplicationController',
  'DaemonSet',
  'Job',
  'CronJob',
  'TrainingJob',
  'InferenceService',
  'BatchInferenceJob',
  'PyTorchJob',
  'TFJob',
  'MPIJob',
  'PaddleJob',
  'XGBoostJob',
  'JAXJob',
  'TrainJob',
  'LeaderWorkerSet',
] as const;

const WORKLOADS: ReadonlySet<string> = new Set(WORKLOAD_KINDS);
/** The object is of a kind that carries pod templates. */
export const isWorkload = (o: KubeObject): boolean => typeof o === 'object' && o !== null && WORKLOADS.has(kindOf(o));

/** Kinds that are distributed training by definition (their pods form one job of ranks). */
export function isTrainingKind(o: KubeObject): boolean {
  const k = kindOf(o);
  if (k === 'Job') return groupOf(o) === 'batch.volcano.sh';
  return (
    k === 'TrainingJob' ||
    k === 'PyTorchJob' ||
    k === 'TFJob' ||
    k === 'MPIJob' ||
    k === 'PaddleJob' ||
    k === 'XGBoostJob' ||
    k === 'JAXJob' ||
    k === 'TrainJob'
  );
}

/** SITS's own kinds (group ai.sits2026.dev), whose typed fields the controllers turn into pods. */
export const isSitsKind = (o: KubeObject): boolean => groupOf(o) === API_GROUP;

const sitesCache = new WeakMap<object, readonly PodSite[]>();

/** Every pod spec in the object, in document order; [] for kinds without pods or a malformed object. */
export function podSites(o: KubeObject): readonly PodSite[] {
  if (typeof o !== 'object' || o === null) return [];
  let s = sitesCache.get(o);
  if (s === undefined) {
    s = extract(o);
    sitesCache.set(o, s);
  }
  return s;
}

function containersOf(spec: unknown, specPath: FieldPath): ContainerSite[] {
  const out: ContainerSite[] = [];
  for (const [key, init] of [
    ['initContainers', true],
    ['containers', false],
  ] as const) {
    list(field(spec, key)).forEach((c, i) => {
      if (!isRecord(c)) return;
      const path = [...specPath, key, i];
      out.push({ container: c, path, name: str(c.name) ?? '', init, resourcesPath: [...path, 'resources'] });
    });
  }
  return out;
}

/** A pod template `{metadata, spec}` at `path`. */
function templateSite(tmpl: unknown, path: FieldPath, replicas: number | undefined, role?: string): PodSite | undefined {
  const spec = field(tmpl, 'spec');
  if (!isRecord(spec)) return undefined;
  const md = field(tmpl, 'metadata');
  const specPath = [...path, 'spec'];
  return {
    path: specPath,
    spec,
    synthetic: false,
    metadataPath: isRecord(md) ? [...path, 'metadata'] : undefined,
    labels: stringMap(field(md, 'labels')),
    annotations: stringMap(field(md, 'annotations')),
    replicas,
    role,
    containers: containersOf(spec, specPath),
  };
}

/**
 * SITS TrainingJob / InferenceService / BatchInferenceJob: `spec.podTemplate` (a pod template) or a typed
 * `spec.container`; the per-replica `spec.resources` and GPU count go on the trainer container (named "trainer",
 * else the first), as the controller builds the pods.
 */
function sitsSite(o: KubeObject, replicas: number, gpuField: string, gpuDefault: number): PodSite | undefined {
  const spec = field(o, 'spec');
  if (!isRecord(spec)) return undefined;
  const resources = field(spec, 'resources');
  const gpuValue = int(field(spec, gpuField));
  const fromList = int(field(resources, GPU_RESOURCE));
  const gpus =
    gpuValue !== undefined
      ? { count: gpuValue, path: ['spec', gpuField] }
      : fromList !== undefined
        ? { count: fromList, path: ['spec', 'resources', GPU_RESOURCE] }
        : gpuDefault > 0
          ? { count: gpuDefault, path: ['spec'] }
          : undefined;
  const implied = { resources: isRecord(resources) ? resources : {}, path: ['spec', 'resources'], ...(gpus === undefined ? {} : { gpus }) };
  const tmpl = field(spec, 'podTemplate');
  let site: PodSite | undefined;
  if (isRecord(tmpl)) site = templateSite(tmpl, ['spec', 'podTemplate'], replicas);
  else {
    const c = field(spec, 'container');
    const container = isRecord(c) ? c : {};
    const path = isRecord(c) ? ['spec', 'container'] : ['spec'];
    site = {
      path: ['spec'],
      spec: {},
      synthetic: true,
      metadataPath: undefined,
      labels: {},
      annotations: {},
      replicas,
      role: undefined,
      containers: [{ container, path, name: str(container.name) ?? 'trainer', init: false, resourcesPath: [...path, 'resources'] }],
    };
  }
  if (site === undefined) return undefined;
  const main = site.containers.filter((c) => !c.init);
  const trainer = main.find((c) => c.name === 'trainer') ?? main[0];
  return { ...site, containers: site.containers.map((c) => (c === trainer ? { ...c, implied } : c)) };
}

function extract(o: KubeObject): PodSite[] {
  const spec = field(o, 'spec');
  const out: (PodSite | undefined)[] = [];
  const replicas = (v: unknown, dflt: number | undefined = 1): number | undefined => int(v) ?? dflt;
  switch (kindOf(o)) {
    case 'Pod': {
      if (!isRecord(spec)) break;
      out.push({
        path: ['spec'],
        spec,
        synthetic: false,
        metadataPath: isRecord(o.metadata) ? ['metadata'] : undefined,
        labels: labelsOf(o),
        annotations: annotationsOf(o),
        replicas: 1,
        role: undefined,
        containers: containersOf(spec, ['spec']),
      });
      break;
    }
    case 'Deployment':
    case 'StatefulSet':
    case 'ReplicaSet':
    case 'ReplicationController':
      out.push(templateSite(field(spec, 'template'), ['spec', 'template'], replicas(field(spec, 'replicas'))));
      break;
    case 'DaemonSet':
      out.push(templateSite(field(spec, 'template'), ['spec', 'template'], undefined));
      break;
    case 'Job':
      if (groupOf(o) === 'batch.volcano.sh') {
        list(field(spec, 'tasks')).forEach((t, i) =>
          out.push(templateSite(field(t, 'template'), ['spec', 'tasks', i, 'template'], replicas(field(t, 'replicas')), str(field(t, 'name')))),
        );
      } else out.push(templateSite(field(spec, 'template'), ['spec', 'template'], replicas(field(spec, 'parallelism'))));
      break;
    case 'CronJob': {
      const js = field(field(spec, 'jobTemplate'), 'spec');
      out.push(templateSite(field(js, 'template'), ['spec', 'jobTemplate', 'spec', 'template'], replicas(field(js, 'parallelism'))));
      break;
    }
    case 'TrainingJob':
      if (isSitsKind(o)) out.push(sitsSite(o, replicas(field(spec, 'replicas')) ?? 1, 'gpusPerReplica', 0));
      break;
    case 'InferenceService':
      if (isSitsKind(o)) out.push(sitsSite(o, Math.max(replicas(field(spec, 'replicas')) ?? 1, int(field(spec, 'maxReplicas')) ?? 0), 'gpusPerReplica', 1));
      else if (groupOf(o) === 'serving.kserve.io') {
        // KServe: the predictor is a pod spec inline (containers, volumes, nodeSelector next to minReplicas/maxReplicas).
        const p = field(spec, 'predictor');
        if (isRecord(p)) {
          const path = ['spec', 'predictor'];
          const n = Math.max(int(p.minReplicas) ?? 1, int(p.maxReplicas) ?? 0);
          out.push({
            path,
            spec: p,
            synthetic: false,
            metadataPath: undefined,
            labels: {},
            annotations: annotationsOf(o),
            replicas: n,
            role: 'predictor',
            containers: containersOf(p, path),
          });
        }
      }
      break;
    case 'BatchInferenceJob':
      if (isSitsKind(o)) out.push(sitsSite(o, replicas(field(spec, 'workers')) ?? 1, 'gpusPerWorker', 1));
      break;
    case 'TrainJob': {
      // Kubeflow Trainer v2: one typed trainer container per node.
      const t = field(spec, 'trainer');
      if (!isRecord(t)) break;
      const path = ['spec', 'trainer'];
      out.push({
        path,
        spec: {},
        synthetic: true,
        metadataPath: undefined,
        labels: {},
        annotations: {},
        replicas: replicas(t.numNodes),
        role: undefined,
        containers: [{ container: t, path, name: 'trainer', init: false, resourcesPath: [...path, 'resourcesPerNode'] }],
      });
      break;
    }
    case 'LeaderWorkerSet': {
      const groups = replicas(field(spec, 'replicas')) ?? 1;
      const lwt = field(spec, 'leaderWorkerTemplate');
      const size = replicas(field(lwt, 'size')) ?? 1;
      const leader = field(lwt, 'leaderTemplate');
      if (isRecord(leader)) out.push(templateSite(leader, ['spec', 'leaderWorkerTemplate', 'leaderTemplate'], groups, 'leader'));
      out.push(
        templateSite(
          field(lwt, 'workerTemplate'),
          ['spec', 'leaderWorkerTemplate', 'workerTemplate'],
          groups * (isRecord(leader) ? Math.max(0, size - 1) : size),
          'worker',
        ),
      );
      break;
    }
    default:
      // Kubeflow training operators: spec.<framework>ReplicaSpecs.<Master|Worker|...>.template.
      if (isTrainingKind(o) && isRecord(spec)) {
        for (const [key, roles] of Object.entries(spec)) {
          if (!key.endsWith('ReplicaSpecs') || !isRecord(roles)) continue;
          for (const [role, rs] of Object.entries(roles))
            out.push(templateSite(field(rs, 'template'), ['spec', key, role, 'template'], replicas(field(rs, 'replicas')), role));
        }
      }
  }
  return out.filter((s): s is PodSite => s !== undefined);
}

/** Pods the object makes in all; undefined when some template does not say (a DaemonSet). */
export function podCount(o: KubeObject): number | undefined {
  let n = 0;
  for (const s of podSites(o)) {
    if (s.replicas === undefined) return undefined;
    n += s.replicas;
  }
  return n;
}

// ---------------------------------------------------------------------------------------------
// Containers: env, argv, resources
// ---------------------------------------------------------------------------------------------

export interface EnvEntry {
  readonly name: string;
  /** The literal value; undefined for valueFrom (unknown until the pod runs). */
  readonly value: string | undefined;
  /** Path of the env entry. */
  readonly path: FieldPath;
  /** Path of the literal value when there is one, else of the entry. */
  readonly valuePath: FieldPath;
}

const envCache = new WeakMap<object, ReadonlyMap<string, EnvEntry>>();

/** The container's env by name; a later entry with the same name wins, as in the kubelet. */
export function envOf(c: ContainerSite): ReadonlyMap<string, EnvEntry> {
  let m = envCache.get(c.container);
  if (m === undefined) {
    const out = new Map<string, EnvEntry>();
    list(c.container.env).forEach((e, i) => {
      const name = str(field(e, 'name'));
      if (name === undefined) return;
      const v = field(e, 'value');
      const value = typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : undefined;
      const path = [...c.path, 'env', i];
      out.set(name, { name, value, path, valuePath: value === undefined ? path : [...path, 'value'] });
    });
    m = out;
    envCache.set(c.container, m);
  }
  return m;
}

export const envValue = (c: ContainerSite, name: string): string | undefined => envOf(c).get(name)?.value;

/** One whitespace-separated word of a container's command line, with the argv element it is in. */
export interface ArgToken {
  readonly text: string;
  readonly path: FieldPath;
}

const tokenCache = new WeakMap<object, readonly ArgToken[]>();

/**
 * command then args, each element split on whitespace (so `sh -c "torchrun ... --num-workers 8"` reads like an
 * argv), surrounding quotes dropped.
 */
export function argTokens(c: ContainerSite): readonly ArgToken[] {
  let t = tokenCache.get(c.container);
  if (t === undefined) {
    const out: ArgToken[] = [];
    for (const key of ['command', 'args'] as const) {
      list(c.container[key]).forEach((a, i) => {
        if (typeof a !== 'string' && typeof a !== 'number') return;
        for (const w of String(a).split(/\s+/)) {
          const text = trimQuotes(w);
          if (text !== '') out.push({ text, path: [...c.path, key, i] });
        }
      });
    }
    t = out;
    tokenCache.set(c.container, t);
  }
  return t;
}

const QUOTES = new Set(["'", '"']);

/** The word without surrounding quotes (and a trailing `;`); by index, as `/['"]+$/` backtracks quadratically on a long run of quotes. */
function trimQuotes(w: string): string {
  let a = 0;
  let b = w.length;
  while (a < b && QUOTES.has(w.charAt(a))) a++;
  while (b > a && (QUOTES.has(w.charAt(b - 1)) || w.charAt(b - 1) === ';')) b--;
  return w.slice(a, b);
}

/** The command line as one string (command and args joined by spaces). */
export const commandLine = (c: ContainerSite): string =>
  argTokens(c)
    .map((t) => t.text)
    .join(' ');

const normFlag = (f: string): string => f.replace(/^-+/, '').toLowerCase().replace(/_/g, '-');

/**
 * The value of the last of the given flags (`--num-workers 4`, `--num_workers=4`; `-` and `_` alike) on the
 * command line, with the argv element it came from.
 */
export function flagValue(c: ContainerSite, names: readonly string[]): ArgToken | undefined {
  const wanted = new Set(names.map(normFlag));
  const toks = argTokens(c);
  let found: ArgToken | undefined;
  for (let i = 0; i < toks.length; i++) {
    const t = toks[i];
    if (t === undefined || !t.text.startsWith('-')) continue;
    const eq = t.text.indexOf('=');
    const name = normFlag(eq < 0 ? t.text : t.text.slice(0, eq));
    if (!wanted.has(name)) continue;
    if (eq >= 0) found = { text: t.text.slice(eq + 1).replace(/^['"]|['"]$/g, ''), path: t.path };
    else {
      const next = toks[i + 1];
      if (next !== undefined && !next.text.startsWith('-')) found = next;
    }
  }
  return found;
}

const volumeCache = new WeakMap<object, ReadonlyMap<string, Json>>();

/** A pod spec's volumes by name. */
export function volumesOf(s: PodSite): ReadonlyMap<string, Json> {
  let m = volumeCache.get(s.spec);
  if (m === undefined) {
    const out = new Map<string, Json>();
    for (const v of list(s.spec.volumes)) {
      const name = str(field(v, 'name'));
      if (isRecord(v) && name !== undefined) out.set(name, v);
    }
    m = out;
    volumeCache.set(s.spec, m);
  }
  return m;
}

/** A volume mount of a container, with its index in `volumeMounts`. */
export interface MountAt {
  readonly mount: Json;
  readonly index: number;
  readonly mountPath: string;
  readonly volume: string;
}

const mountCache = new WeakMap<object, ReadonlyMap<string, MountAt>>();
const stripSlash = (p: string): string => {
  let end = p.length;
  while (end > 1 && p.charAt(end - 1) === '/') end--;
  return p.slice(0, end);
};
// Deeper paths are not real directories; bounding the walk keeps a pathological path from costing more than its length.
const MAX_PATH_DEPTH = 128;

/** The container's mounts by mount path (the later of two with one path wins, as the kubelet rejects duplicates anyway). */
export function mountsOf(c: ContainerSite): ReadonlyMap<string, MountAt> {
  let m = mountCache.get(c.container);
  if (m === undefined) {
    const out = new Map<string, MountAt>();
    list(c.container.volumeMounts).forEach((x, index) => {
      const mp = str(field(x, 'mountPath'));
      const volume = str(field(x, 'name'));
      if (isRecord(x) && mp !== undefined && volume !== undefined && mp.startsWith('/')) out.set(stripSlash(mp), { mount: x, index, mountPath: mp, volume });
    });
    m = out;
    mountCache.set(c.container, m);
  }
  return m;
}

/** The mount an absolute path lies on (the deepest mount path that is the path or one of its parents), or undefined. */
export function mountFor(c: ContainerSite, path: string): MountAt | undefined {
  const mounts = mountsOf(c);
  if (mounts.size === 0 || !path.startsWith('/')) return undefined;
  let p = stripSlash(path);
  for (let depth = 0; depth < MAX_PATH_DEPTH; depth++) {
    const hit = mounts.get(p);
    if (hit !== undefined) return hit;
    if (p === '/') return undefined;
    const cut = p.lastIndexOf('/');
    p = cut <= 0 ? '/' : p.slice(0, cut);
  }
  return undefined;
}

/** A quantity written in the manifest, with where. */
export interface QuantityAt {
  readonly value: string | number;
  readonly path: FieldPath;
}

/**
 * A container's request or limit of one resource as the pod will get it: its own `resources`, else (SITS kinds)
 * the spec's per-replica value, which the controller sets as both request and limit.
 */
export function resourceOf(c: ContainerSite, which: 'requests' | 'limits', key: string): QuantityAt | undefined {
  const own = field(field(at(c.container, c.resourcesPath.slice(c.path.length)), which), key);
  if (typeof own === 'string' || typeof own === 'number') return { value: own, path: [...c.resourcesPath, which, key] };
  const imp = c.implied;
  if (imp === undefined) return undefined;
  if (key === GPU_RESOURCE) return imp.gpus === undefined ? undefined : { value: imp.gpus.count, path: imp.gpus.path };
  const v = imp.resources[key];
  return typeof v === 'string' || typeof v === 'number' ? { value: v, path: [...imp.path, key] } : undefined;
}

/** The CPU limit in millicores with where it is set; undefined without a (readable) limit. */
export function cpuLimit(c: ContainerSite): { readonly milli: number; readonly at: QuantityAt } | undefined {
  const q = resourceOf(c, 'limits', 'cpu');
  const milli = q === undefined ? undefined : quantityToMilli(q.value);
  return q === undefined || milli === undefined || milli < 0 ? undefined : { milli, at: q };
}

/** Whole GPUs a container asks for (limits, else requests); 0 when absent, fractional or unreadable. */
export function containerGpus(c: ContainerSite): number {
  const q = resourceOf(c, 'limits', GPU_RESOURCE) ?? resourceOf(c, 'requests', GPU_RESOURCE);
  if (q === undefined) return 0;
  const n = quantityToNano(q.value);
  return n === undefined || n <= 0n ? 0 : Number(n / 1_000_000_000n);
}

/** GPUs one pod of the template uses: the containers' sum (max with init containers), or one shared device. */
export function podGpus(s: PodSite): number {
  let main = 0;
  let init = 0;
  for (const c of s.containers) {
    const g = containerGpus(c);
    if (c.init) init = Math.max(init, g);
    else main += g;
  }
  const n = Math.max(main, init);
  return n === 0 && s.annotations[ANNOTATION.gpuFraction] !== undefined ? 1 : n;
}

export const objectGpus = (o: KubeObject): number => podSites(o).reduce((acc, s) => acc + podGpus(s), 0);

/** Processes per pod: torchrun `--nproc-per-node N`, PET_NPROC_PER_NODE, a TrainingJob's nprocPerNode, else one per GPU (at least 1). */
export function processesPerPod(o: KubeObject, s: PodSite, c: ContainerSite): number {
  const flag = flagValue(c, ['--nproc-per-node', '--nproc_per_node']);
  const fromFlag = flag === undefined ? undefined : int(flag.text);
  if (fromFlag !== undefined && fromFlag > 0) return fromFlag;
  const fromEnv = int(envValue(c, 'PET_NPROC_PER_NODE'));
  if (fromEnv !== undefined && fromEnv > 0) return fromEnv;
  if (kindOf(o) === 'TrainingJob' && isSitsKind(o)) {
    const n = int(field(o.spec, 'nprocPerNode'));
    if (n !== undefined && n > 0) return n;
    return Math.max(1, podGpus(s));
  }
  if (flag !== undefined && flag.text === 'gpu') return Math.max(1, podGpus(s));
  return 1;
}

// ---------------------------------------------------------------------------------------------
// Distributed training
// ---------------------------------------------------------------------------------------------

const LAUNCHERS = ['torchrun', 'torch.distributed.run', 'torch.distributed.launch', 'deepspeed', 'horovodrun', 'accelerate'];
// NCCL_* alone is no signal: multi-GPU inference (vLLM, TGI tensor parallelism) sets it too.
const DIST_ENV = ['MASTER_ADDR', 'PET_MASTER_ADDR', 'WORLD_SIZE', 'PET_NNODES', 'NODE_RANK', 'PET_NODE_RANK'];

const ENGINES = ['vllm', 'text-generation-inference', 'text-generation-launcher', 'tritonserver', 'tensorrt-llm', 'tensorrtllm', 'sglang', 'lmdeploy'];

/** The inference engine a container runs (vLLM, TGI, Triton, TensorRT-LLM, SGLang, LMDeploy), judged by its image and command, or undefined. */
export function inferenceEngine(c: ContainerSite): string | undefined {
  const image = (str(c.container.image) ?? '').toLowerCase();
  const cut = image.search(/[:@]/);
  const repo = cut < 0 ? image : image.slice(0, cut);
  const fromImage = ENGINES.find((e) => repo.includes(e));
  if (fromImage !== undefined) return fromImage;
  for (const t of argTokens(c)) {
    const base = t.text.slice(t.text.lastIndexOf('/') + 1).toLowerCase();
    const hit = ENGINES.find((e) => base === e || base.startsWith(`${e}.`));
    if (hit !== undefined) return hit;
  }
  return undefined;
}

/** Why a container looks like one rank of a distributed (DDP/torchrun) training job, or undefined; inference engines never do. */
export function distributedSignal(c: ContainerSite): { readonly why: string; readonly path: FieldPath } | undefined {
  if (inferenceEngine(c) !== undefined) return undefined;
  for (const t of argTokens(c)) {
    const base = t.text.slice(t.text.lastIndexOf('/') + 1);
    if (LAUNCHERS.includes(base) || t.text.includes('torch.distributed')) return { why: `runs ${base}`, path: t.path };
  }
  for (const e of envOf(c).values()) if (DIST_ENV.includes(e.name)) return { why: `sets ${e.name}`, path: e.path };
  return undefined;
}

/** The first distributed-training signal of any container of the object. */
export function objectDistributedSignal(o: KubeObject): { readonly why: string; readonly path: FieldPath } | undefined {
  for (const s of podSites(o)) {
    for (const c of s.containers) {
      const sig = distributedSignal(c);
      if (sig !== undefined) return sig;
    }
  }
  return undefined;
}

/** A job of several ranks: a training kind, or a distributed-training command/env, with more than one pod (or an unknown number). */
export function isMultiRankTraining(o: KubeObject): boolean {
  const n = podCount(o);
  if (n !== undefined && n <= 1) return false;
  return isTrainingKind(o) || objectDistributedSignal(o) !== undefined;
}

/**
 * Ranks of a distributed job (WORLD_SIZE): a literal WORLD_SIZE a container sets, else the sum over its templates of
 * pods × processes per pod; undefined when the number of pods is not known (a DaemonSet).
 */
export function worldSize(o: KubeObject): number | undefined {
  let n = 0;
  for (const s of podSites(o)) {
    const main = s.containers.find((c) => !c.init);
    if (main === undefined) continue;
    const literal = int(envValue(main, 'WORLD_SIZE'));
    if (literal !== undefined && literal > 0) return literal;
    if (s.replicas === undefined) return undefined;
    n += s.replicas * processesPerPod(o, s, main);
  }
  return n;
}

/** An elastic job tolerates a changing world: a TrainingJob with minReplicas/maxReplicas, a PyTorchJob with an elasticPolicy. */
export function isElastic(o: KubeObject): boolean {
  const spec = field(o, 'spec');
  if (kindOf(o) === 'TrainingJob') return field(spec, 'minReplicas') !== undefined || field(spec, 'maxReplicas') !== undefined;
  return isRecord(field(spec, 'elasticPolicy'));
}

// ---------------------------------------------------------------------------------------------
// Gangs
// ---------------------------------------------------------------------------------------------

/** Where pods name their gang: ours first, then the other gang schedulers' labels and annotations. */
export const GANG_KEYS: readonly { readonly key: string; readonly in: 'labels' | 'annotations' }[] = [
  { key: LABEL.podGroup, in: 'labels' },
  { key: 'scheduling.k8s.io/group-name', in: 'annotations' },
  { key: 'scheduling.volcano.sh/group-name', in: 'annotations' },
  { key: 'scheduling.x-k8s.io/pod-group', in: 'labels' },
  { key: 'pod-group.scheduling.sigs.k8s.io', in: 'labels' },
  { key: 'kueue.x-k8s.io/pod-group-name', in: 'labels' },
];

/** The gang a pod template belongs to through a pod-group label or annotation, with where it is written. */
export function gangOf(s: PodSite): { readonly key: string; readonly name: string; readonly path: FieldPath } | undefined {
  for (const g of GANG_KEYS) {
    const name = (g.in === 'labels' ? s.labels : s.annotations)[g.key];
    if (name !== undefined && name !== '') return { key: g.key, name, path: [...(s.metadataPath ?? s.path), g.in, g.key] };
  }
  return undefined;
}

/** The scheduler of a pod template (`default-scheduler` when unset) and where it is set. */
export function schedulerOf(o: KubeObject, s: PodSite): { readonly name: string; readonly path: FieldPath | undefined } {
  // SITS controllers always set sits-scheduler; the Volcano job controller sets spec.schedulerName (default volcano) on every task.
  if (isSitsKind(o)) return { name: SCHEDULER_NAME, path: undefined };
  if (kindOf(o) === 'Job' && groupOf(o) === 'batch.volcano.sh') {
    const top = str(field(o.spec, 'schedulerName'));
    return top === undefined ? { name: 'volcano', path: undefined } : { name: top, path: ['spec', 'schedulerName'] };
  }
  const own = str(s.spec.schedulerName);
  if (own !== undefined) return { name: own, path: [...s.path, 'schedulerName'] };
  return { name: 'default-scheduler', path: undefined };
}
