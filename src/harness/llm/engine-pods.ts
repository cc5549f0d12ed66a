/**
 * Dev mode and tests only: what a node's container runtime would do for pods of the llamacpp and vllm runtimes.
 * The fake kubelet (fake-kubelet.ts) hands such a pod here; it starts the engine's stand-in as a process — the
 * llama-server stand-in (llama-server-main.ts) for llama.cpp's server image, the vLLM stand-in
 * (vllm-server-main.ts, with the container's env) for vLLM's — with the pod's container args on the pod's own loopback address (127.x.y.z is all loopback on Linux,
 * so every pod keeps its container port), probes the pod's readinessProbe httpGet like the kubelet's prober, and
 * stops the process when the pod goes. Container paths (/mnt/models, /mnt/adapters/<name>) are mapped to files
 * on this machine by `paths`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { buildSync } from 'esbuild';
import { ANNOTATION } from '../../api/wire.ts';
import { overlayPaths } from '../configmap-volumes.ts';

/**
 * The dev pod network. The apiserver refuses loopback addresses in EndpointSlices (ValidateNonSpecialIP), and
 * this machine has one real address, so a pod's IP is 100.b.c.d (RFC 6598 shared space, b in 64..127) and its
 * engine listens on the loopback alias 127.b.c.d. Whoever dials a pod IP in dev mode maps it with this; any
 * other address is returned as it is.
 */
export function devPodAddress(ip: string): string {
  const m = /^100\.(\d+)\.(\d+)\.(\d+)$/.exec(ip);
  if (m === null) return ip;
  const b = Number(m[1]);
  return b >= 64 && b <= 127 ? `127.${b}.${m[2]}.${m[3]}` : ip;
}

/** llama.cpp's server images (ghcr.io/ggml-org/llama.cpp:server, :server-cuda, ...), the runtime's default. */
export const LLAMA_SERVER_IMAGE = /^ghcr\.io\/ggml-org\/llama\.cpp:server(-[a-z0-9.-]+)?$/;

/** vLLM's OpenAI-server image (vllm/vllm-openai:<tag>, from Docker Hub by any of its names), or its CPU build's. */
export const VLLM_IMAGE =
  /^((docker\.io\/)?(library\/)?vllm\/vllm-openai|public\.ecr\.aws\/q9t5s3a7\/vllm-cpu-release-repo)(:[\w.-]+)?(@sha256:[0-9a-f]{64})?$/;

/** Which stand-in a pod's first container gets: by its image; undefined for any other image. */
export function engineKind(pod: V1Pod): 'llamacpp' | 'vllm' | undefined {
  const image = pod.spec?.containers?.[0]?.image ?? '';
  if (LLAMA_SERVER_IMAGE.test(image)) return 'llamacpp';
  if (VLLM_IMAGE.test(image)) return 'vllm';
  return undefined;
}

export interface EnginePodsOptions {
  /** Container path → file on this machine, exact or as a directory prefix. */
  readonly paths: Readonly<Record<string, string>>;
  /**
   * Per pod, asked when its engine starts: entries over `paths` (undefined: remove that path), as if that pod's node
   * lacked a volume or had another one (tests of an adapter missing on one replica).
   */
  readonly podPaths?: (pod: V1Pod) => Readonly<Record<string, string | undefined>>;
  /**
   * Which pods run an engine: by default a pod whose first container has llama.cpp's server image or vLLM's
   * (engineKind); a pod matched here with any other image gets the llama-server stand-in.
   */
  readonly matches?: (pod: V1Pod) => boolean;
  /** The prober's period (the pod's periodSeconds is minutes of test time; tests want fractions of a second). */
  readonly probeEveryMs?: number;
  /** Passed to each engine: it stays "Loading model" while this file exists (tests of readiness). */
  readonly holdWhileExists?: string;
  /**
   * Fault injection per device: the engine of a pod on node N holding GPUs G (its gpu-indices annotation, e.g. `3`
   * or `0,1`) fails every completion while the file `<faultDir>/<N>/<G>` exists (faultFile names it).
   */
  readonly faultDir?: string;
  readonly log?: (line: string) => void;
  /**
   * Dev mode (`sits dev up`): the GGUF file that stands in for any Hugging Face model id a vLLM pod names (vLLM
   * would download it; this machine has no network). Unset: such a pod's engine exits with the stand-in's error.
   */
  readonly hubModel?: string;
  /** The kubeconfig a `sits` side container (a batch worker) is given, as a service account token would be. */
  readonly kubeconfig?: string;
}

interface Engine {
  readonly key: string;
  readonly ip: string;
  readonly port: number;
  readonly child: ChildProcess;
  exited: boolean;
  ready: boolean;
  timer: ReturnType<typeof setTimeout> | undefined;
  stopping: boolean;
  /** A `sits ...` container beside the engine (the batch worker), run as a process of the CLI. */
  side?: ChildProcess;
}

const MAIN = join(import.meta.dirname, 'llama-server-main.ts');
const VLLM_MAIN = join(import.meta.dirname, 'vllm-server-main.ts');
const REPO = join(import.meta.dirname, '..', '..', '..');
const SITS = join(REPO, 'bin', 'sits.mjs');
const WATCHDOG = join(import.meta.dirname, 'parent-watchdog.ts');

const bundles = new Map<string, string | undefined>();
/**
 * `source` as one plain JavaScript file, bundled once per process by esbuild (a dev dependency) into .tmp/engines/
 * (packages stay imports, resolved from the repository's node_modules), removed when this process exits: a
 * container then starts without tsx's loader and transpiling, about 1 s less per start on two busy cores, and an
 * e2e run starts tens of them. Undefined where esbuild is missing or fails (an installed image): tsx runs the source.
 */
function bundled(source: string): string | undefined {
  if (!bundles.has(source)) bundles.set(source, bundle(source));
  return bundles.get(source);
}

function bundle(source: string): string | undefined {
  const out = join(REPO, '.tmp', 'engines', `${basename(source, '.ts')}-${process.pid}.mjs`);
  try {
    const esbuild = createRequire(import.meta.url)('esbuild') as { buildSync: typeof buildSync };
    esbuild.buildSync({ entryPoints: [source], bundle: true, platform: 'node', format: 'esm', packages: 'external', outfile: out, logLevel: 'silent' });
  } catch {
    return undefined;
  }
  process.once('exit', () => rmSync(out, { force: true }));
  return out;
}

/** Node's arguments that run `source`: its bundle, or the source under tsx. */
function nodeArgs(source: string): string[] {
  const js = bundled(source);
  return js === undefined ? ['--import', 'tsx', source] : [js];
}

/** Node's arguments that preload the watchdog (its bundle, or the source under tsx) into a container process. */
function watchdogArgs(): string[] {
  const js = bundled(WATCHDOG);
  return js === undefined ? ['--import', 'tsx', '--import', WATCHDOG] : ['--import', pathToFileURL(js).href];
}

/** The file whose existence makes the engine of `pod` fail (EnginePodsOptions.faultDir): per node and GPU set. */
export function faultFile(dir: string, pod: V1Pod): string {
  const gpus = pod.metadata?.annotations?.[ANNOTATION.gpuIndices] ?? '';
  return join(dir, pod.spec?.nodeName ?? 'unscheduled', gpus === '' ? 'cpu' : gpus);
}

/** A container path mapped to this machine by `paths` (exact, or under a mapped folder); others unchanged. */
export function mapPath(paths: Readonly<Record<string, string>>, p: string): string {
  for (const [from, to] of Object.entries(paths)) {
    if (p === from) return to;
    if (p.startsWith(`${from}/`)) return join(to, p.slice(from.length + 1));
  }
  return p;
}

/**
 * What the kubelet does to a container's env and args: values, downward-API fieldRefs (name, namespace, uid, the
 * pod IP, which here is the loopback alias this machine can dial), then $(VAR) in args; paths mapped by `paths`.
 */
export function sideContainerLaunch(
  c: V1Container,
  pod: V1Pod,
  podIp: string,
  paths: Readonly<Record<string, string>>,
): { args: string[]; env: Record<string, string> } {
  const env: Record<string, string> = {};
  const fields: Record<string, string> = {
    'metadata.name': pod.metadata?.name ?? '',
    'metadata.namespace': pod.metadata?.namespace ?? 'default',
    'metadata.uid': pod.metadata?.uid ?? '',
    'status.podIP': devPodAddress(podIp),
  };
  for (const e of c.env ?? []) {
    if (e.value !== undefined) env[e.name] = e.value;
    else if (e.valueFrom?.fieldRef !== undefined) env[e.name] = fields[e.valueFrom.fieldRef.fieldPath] ?? '';
  }
  const expand = (a: string): string => a.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (m, v: string) => env[v] ?? m);
  const args = [...(c.command ?? []).slice(1), ...(c.args ?? [])].map((a) => mapPath(paths, expand(a)));
  return { args, env };
}

function container(pod: V1Pod): V1Container | undefined {
  return pod.spec?.containers?.[0];
}

/**
 * One result of the readiness prober, with the kubelet's thresholds: a ready pod turns unready only after
 * failureThreshold failures in a row (default 3), an unready one ready after successThreshold successes (default
 * 1) — one slow answer on a busy machine is not an outage. An exited container is unready at once.
 */
export function probeStep(
  s: { readonly ready: boolean; readonly streak: number },
  ok: boolean,
  probe: { readonly failureThreshold?: number; readonly successThreshold?: number } | undefined,
  exited = false,
): { ready: boolean; streak: number } {
  if (ok === s.ready) return { ready: s.ready, streak: 0 };
  const streak = s.streak + 1;
  const needed = Math.max(1, ok ? (probe?.successThreshold ?? 1) : (probe?.failureThreshold ?? 3));
  return exited || streak >= needed ? { ready: ok, streak: 0 } : { ready: s.ready, streak };
}

/** A probe's port: a number, a numeric string or the name of one of the container's ports. */
export function probePort(c: V1Container, port: number | string | undefined): number | undefined {
  if (typeof port === 'number') return port;
  if (port === undefined) return undefined;
  if (/^\d+$/.test(port)) return Number(port);
  return c.ports?.find((p) => p.name === port)?.containerPort;
}

/** The container's args with --host set to the pod's address (the container would bind 0.0.0.0 in its own network namespace). */
export function engineArgs(c: V1Container, ip: string): string[] {
  const args = [...(c.args ?? [])];
  const i = args.indexOf('--host');
  if (i >= 0 && i + 1 < args.length) args[i + 1] = ip;
  else args.push('--host', ip);
  return args;
}

/**
 * The vLLM stand-in's environment: this process's (node, tsx) without any VLLM_* variable of its own, then the
 * container's env as the kubelet fills it (so VLLM_ALLOW_RUNTIME_LORA_UPDATING is what the pod says), then the path map.
 */
export function vllmEnv(c: V1Container, pod: V1Pod, podIp: string, paths: Readonly<Record<string, string>>): Record<string, string> {
  const own = Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined && !e[0].startsWith('VLLM_')));
  return { ...own, ...sideContainerLaunch(c, pod, podIp, paths).env, SITS_LLAMA_PATHS: JSON.stringify(paths) };
}

function argValue(args: readonly string[], names: readonly string[]): string | undefined {
  for (let i = args.length - 2; i >= 0; i--) if (names.includes(args[i] as string)) return args[i + 1];
  return undefined;
}

export class EnginePods {
  private readonly engines = new Map<string, Engine>();
  private ipSeq = 1;
  // Spread by process so that two test processes on one machine do not share addresses.
  private readonly subnet = 64 + (process.pid % 64);

  constructor(private readonly o: EnginePodsOptions) {}

  matches(pod: V1Pod): boolean {
    if (this.o.matches !== undefined) return this.o.matches(pod);
    return engineKind(pod) !== undefined;
  }

  /** The next pod IP (100.<subnet>.y.z; its engine listens on devPodAddress of it). */
  allocateIp(): string {
    const n = this.ipSeq++;
    return `100.${this.subnet}.${(n >> 8) & 255}.${n & 255}`;
  }

  has(key: string): boolean {
    return this.engines.has(key);
  }

  /** Whether the engine of pod `key` runs (a process that has not exited). */
  running(key: string): boolean {
    const e = this.engines.get(key);
    return e !== undefined && !e.exited;
  }

  /**
   * Starts the engine for the pod of IP `podIp`; `onReady` is called on every readiness change the prober sees. A
   * second container whose command is `sits …` (a batch worker) runs beside it as a process of this repository's
   * CLI; `onSideExit` gets its exit code (the pod's restartPolicy Never makes that the pod's end). `volumes` maps,
   * per container name, the mount paths of volumes the kubelet materialised (configmap-volumes.ts) over `paths`.
   */
  start(
    key: string,
    pod: V1Pod,
    podIp: string,
    onReady: (ready: boolean) => void,
    onSideExit?: (code: number) => void,
    volumes?: ReadonlyMap<string, Readonly<Record<string, string>>>,
  ): void {
    if (this.engines.has(key)) return;
    const c = container(pod);
    if (c === undefined) return;
    const ip = devPodAddress(podIp);
    const args = engineArgs(c, ip);
    const vllm = engineKind(pod) === 'vllm';
    const paths = overlayPaths(this.pathsFor(pod), volumes?.get(c.name));
    const port = Number(argValue(args, ['--port']) ?? (vllm ? '8000' : '8080'));
    const child = spawn(process.execPath, [...nodeArgs(vllm ? VLLM_MAIN : MAIN), ...args], {
      cwd: REPO,
      env: vllm
        ? { ...vllmEnv(c, pod, podIp, paths), ...(this.o.hubModel === undefined ? {} : { SITS_DEV_HUB_MODEL: this.o.hubModel }) }
        : {
            ...process.env,
            SITS_LLAMA_PATHS: JSON.stringify(paths),
            SITS_LLAMA_HOLD_FILE: this.o.holdWhileExists ?? '',
            SITS_LLAMA_FAIL_FILE: this.o.faultDir === undefined ? '' : faultFile(this.o.faultDir, pod),
          },
      // The IPC channel is how the engine learns that this process died (it exits on 'disconnect'), so a crashed
      // test leaves no engine behind; unref'd so that it keeps nothing alive here.
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    });
    child.channel?.unref();
    const e: Engine = { key, ip, port, child, exited: false, ready: false, timer: undefined, stopping: false };
    this.engines.set(key, e);
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (s: string) => {
      for (const line of s.split('\n')) if (line.trim() !== '') this.o.log?.(`engine ${key}: ${line}`);
    });
    child.on('exit', (code, signal) => {
      e.exited = true;
      if (!e.stopping) this.o.log?.(`engine ${key}: exited (${signal ?? `code ${code}`})`);
    });
    child.on('error', (err) => this.o.log?.(`engine ${key}: ${err.message}`));
    const sideC = pod.spec?.containers?.slice(1).find((x) => x.command?.[0] === 'sits');
    if (sideC !== undefined) this.startSide(e, sideC, pod, podIp, onSideExit, overlayPaths(this.o.paths, volumes?.get(sideC.name)));
    const probe = c.readinessProbe?.httpGet;
    const probePortN = probePort(c, probe?.port as number | string | undefined) ?? port;
    const url = `http://${devPodAddress(probe?.host ?? podIp)}:${probePortN}${probe?.path ?? '/'}`;
    const every = this.o.probeEveryMs ?? 200;
    let streak = 0;
    const tick = async (): Promise<void> => {
      if (e.stopping) return;
      let ok = false;
      if (!e.exited) {
        try {
          const r = await fetch(url, { signal: AbortSignal.timeout(Math.max(1000, (c.readinessProbe?.timeoutSeconds ?? 1) * 1000)) });
          await r.arrayBuffer();
          // The kubelet's HTTP prober: any status in [200, 400) is a success.
          ok = r.status >= 200 && r.status < 400;
        } catch {
          ok = false;
        }
      }
      if (e.stopping) return;
      const was = e.ready;
      ({ ready: e.ready, streak } = probeStep({ ready: was, streak }, ok, c.readinessProbe, e.exited));
      if (e.ready !== was) onReady(e.ready);
      e.timer = setTimeout(() => void tick(), every);
    };
    e.timer = setTimeout(() => void tick(), every);
  }

  private pathsFor(pod: V1Pod): Readonly<Record<string, string>> {
    if (this.o.podPaths === undefined) return this.o.paths;
    const out: Record<string, string> = { ...this.o.paths };
    for (const [k, v] of Object.entries(this.o.podPaths(pod))) {
      if (v === undefined) delete out[k];
      else out[k] = v;
    }
    return out;
  }

  private startSide(
    e: Engine,
    c: V1Container,
    pod: V1Pod,
    podIp: string,
    onExit: ((code: number) => void) | undefined,
    paths: Readonly<Record<string, string>>,
  ): void {
    const { args, env } = sideContainerLaunch(c, pod, podIp, paths);
    const child = spawn(process.execPath, [...watchdogArgs(), SITS, ...args], {
      cwd: REPO,
      env: { ...process.env, ...env, ...(this.o.kubeconfig === undefined ? {} : { KUBECONFIG: this.o.kubeconfig }) },
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    });
    child.channel?.unref();
    e.side = child;
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (s: string) => {
      for (const line of s.split('\n')) if (line.trim() !== '') this.o.log?.(`${c.name} ${e.key}: ${line}`);
    });
    child.on('exit', (code, signal) => {
      if (e.stopping) return;
      this.o.log?.(`${c.name} ${e.key}: exited (${signal ?? `code ${code}`})`);
      // A signal is what the kubelet reports as 128 + its number (SIGKILL: 137).
      onExit?.(code ?? 128 + (signal === 'SIGKILL' ? 9 : 15));
    });
  }

  /** Kills the side container of pod `key` (a worker crashing mid-shard, for tests); false when it has none. */
  killSide(key: string): boolean {
    const side = this.engines.get(key)?.side;
    if (side === undefined || side.exitCode !== null) return false;
    return side.kill('SIGKILL');
  }

  /** Stops the pod's engine (SIGTERM, SIGKILL after `graceMs`) and waits for the process to exit. */
  async stop(key: string, graceMs = 5000): Promise<void> {
    const e = this.engines.get(key);
    if (e === undefined) return;
    e.stopping = true;
    if (e.timer !== undefined) clearTimeout(e.timer);
    if (e.side !== undefined && e.side.exitCode === null && e.side.signalCode === null) {
      const side = e.side;
      const gone = new Promise<void>((r) => side.once('exit', () => r()));
      side.kill('SIGTERM');
      const t = setTimeout(() => side.kill('SIGKILL'), graceMs);
      await gone;
      clearTimeout(t);
    }
    if (!e.exited) {
      const exited = new Promise<void>((r) => e.child.once('exit', () => r()));
      e.child.kill('SIGTERM');
      const t = setTimeout(() => e.child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(t);
    }
    this.engines.delete(key);
  }

  async stopAll(): Promise<void> {
    await Promise.all([...this.engines.keys()].map((k) => this.stop(k)));
  }

  /** The engine's address, for tests and the dev cluster's log. */
  address(key: string): { ip: string; port: number } | undefined {
    const e = this.engines.get(key);
    return e === undefined ? undefined : { ip: e.ip, port: e.port };
  }
}
