/**
 * Dev mode only — not part of the product. Plays the kubelet for nodes that have none: a bound pod on a
 * fake node becomes Running (with a pod IP and a started container); annotation
 * `dev.sits2026.dev/exit-code: "0"` (or any other code) makes it Succeeded (or Failed) with that exit code, and
 * `dev.sits2026.dev/termination-message` is then the first container's termination message (what a real container
 * writes to /dev/termination-log);
 * a pod being deleted on a fake node is removed at once. Readiness stands in for the readiness probe: a pod is
 * Ready unless annotation `dev.sits2026.dev/ready: "false"` says its engine's health endpoint would not answer
 * (setting it to "true" or "false" on a running pod flips its Ready condition). With `engines` (llm/engine-pods.ts),
 * a pod of the llamacpp or vllm runtime (by its image) gets a real engine process on its own pod IP instead (the
 * llama-server or the vLLM stand-in, both real llama.cpp inference; served on a loopback alias:
 * devPodAddress), is Ready only while its readinessProbe answers, and its engine is stopped before the pod is
 * removed; a `sits …` container beside the engine (a batch worker) runs as a process too, and its exit ends the
 * pod (Succeeded on 0, else Failed); every other pod is handled as before. Readiness gates (spec.readinessGates) are
 * honoured as the kubelet does: Ready = containers ready and every gate's pod condition True (podReadyCondition),
 * re-judged whenever the pod changes; status is written as strategic-merge patches, so conditions owned by others stay.
 * For the pods it runs as processes it mounts `configMap` volumes as the kubelet does (configmap-volumes.ts: the
 * ConfigMap read from the apiserver, keys or items projected into a folder per pod, each container's mountPath
 * mapped to it); a mount that fails (a ConfigMap that is not there and not optional) keeps the pod Pending in
 * ContainerCreating with a FailedMount Event, retried every few seconds, as the kubelet's volume manager does.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import type { KubeClient } from '../kube/client/client.ts';
import { objectKey, Reflector } from '../kube/client/reflector.ts';
import { materializeClaimVolumes, type ClaimVolumeOptions } from './claim-volumes.ts';
import { materializeConfigMapVolumes, overlayPaths, type PodVolumes } from './configmap-volumes.ts';
import { EnginePods, type EnginePodsOptions } from './llm/engine-pods.ts';

export const EXIT_CODE_ANNOTATION = 'dev.sits2026.dev/exit-code';
/** `"false"`: the pod runs but its readiness probe fails (an engine that never becomes ready). */
export const READY_ANNOTATION = 'dev.sits2026.dev/ready';
/** The first container's termination message once the pod exits (DataPipeline stages report outputs so). */
export const TERMINATION_MESSAGE_ANNOTATION = 'dev.sits2026.dev/termination-message';
/**
 * `"N"`: the pod runs N seconds after it started, then exits (with `exit-code`, default 0). Without it, `exit-code`
 * ends the pod at once and a pod with neither runs until deleted.
 */
export const RUN_SECONDS_ANNOTATION = 'dev.sits2026.dev/run-seconds';

type Cond = { type: string; status: string; lastTransitionTime: string; reason?: string; message?: string };

/**
 * The kubelet's Ready condition (its GeneratePodReadyCondition, KEP-580 readiness gates): Ready only when the
 * containers are ready and, for every `spec.readinessGates[].conditionType`, the pod has that condition True; a
 * missing gate condition counts as False. Reasons and messages are the kubelet's.
 */
export function podReadyCondition(pod: V1Pod, containersReady: boolean, now: string): Cond {
  if (!containersReady) return { type: 'Ready', status: 'False', reason: 'ContainersNotReady', lastTransitionTime: now };
  const unready: string[] = [];
  for (const g of pod.spec?.readinessGates ?? []) {
    const c = pod.status?.conditions?.find((x) => x.type === g.conditionType);
    if (c === undefined) unready.push(`corresponding condition of pod readiness gate "${g.conditionType}" does not exist.`);
    else if (c.status !== 'True') unready.push(`the status of pod readiness gate "${g.conditionType}" is not "True", but ${c.status}`);
  }
  return unready.length === 0
    ? { type: 'Ready', status: 'True', lastTransitionTime: now }
    : { type: 'Ready', status: 'False', reason: 'ReadinessGatesNotReady', message: unready.join(', '), lastTransitionTime: now };
}

function readyConditions(pod: V1Pod, ready: boolean, now: string, since = now): Cond[] {
  return [
    { type: 'PodScheduled', status: 'True', lastTransitionTime: since },
    { type: 'Initialized', status: 'True', lastTransitionTime: since },
    { type: 'ContainersReady', status: ready ? 'True' : 'False', lastTransitionTime: now, ...(ready ? {} : { reason: 'ContainersNotReady' }) },
    podReadyCondition(pod, ready, now),
  ];
}

// Status writes are strategic-merge patches, as the kubelet's: conditions merge by type, so a condition someone
// else owns (a readiness gate's) stays.
const SMP = 'application/strategic-merge-patch+json';

/** The claim volumes' mounts over the configMap ones, per container; a failed claim mount fails the pod's mount. */
function mergeMounts(base: ReadonlyMap<string, Readonly<Record<string, string>>>, over: PodVolumes): PodVolumes {
  if (!over.ok) return over;
  const merged = new Map(base);
  for (const [c, m] of over.mounts) merged.set(c, overlayPaths(merged.get(c) ?? {}, m));
  return { ok: true, mounts: merged };
}

export interface FakeKubeletOptions {
  readonly engines?: EnginePodsOptions;
  /**
   * Mount `persistentVolumeClaim` volumes of the pods run as processes (claim-volumes.ts): hostPath PVs, and CSI PVs
   * of these drivers through their Node service. Without it only configMap volumes are mounted.
   */
  readonly claims?: ClaimVolumeOptions;
  /** The run time of a pod without the run-seconds annotation (undefined: runs until deleted). `sits dev up` sets one for workload pods. */
  readonly defaultRunSeconds?: (pod: V1Pod) => number | undefined;
}

export class FakeKubelet {
  private reflector: Reflector<V1Pod> | undefined;
  private ipSeq = 2;
  private readonly busy = new Set<string>();
  /** Pods with a run time, woken when it is up. */
  private readonly timers = new Map<string, NodeJS.Timeout>();
  /** The latest version of a pod that changed while it was being handled: handled right after (else lost). */
  private readonly again = new Map<string, V1Pod>();
  readonly stats = { started: 0, finished: 0, deleted: 0 };
  /** The engine processes of llamacpp and vllm pods, when asked for. */
  readonly engines: EnginePods | undefined;
  /** The kubelet's pods folder (/var/lib/kubelet/pods): a folder per pod uid with its materialised volumes. */
  private podsDir: string | undefined;
  private readonly mountRetry = new Map<string, ReturnType<typeof setTimeout>>();

  constructor(
    private readonly client: KubeClient,
    private readonly isFakeNode: (node: string) => boolean,
    private readonly log: (m: string) => void = () => undefined,
    private readonly opts: FakeKubeletOptions = {},
  ) {
    this.engines = opts.engines === undefined ? undefined : new EnginePods({ log, ...opts.engines });
  }

  async start(): Promise<void> {
    const handle = (p: V1Pod): void => void this.reconcile(p);
    // A pod removed by someone else (a forced delete) takes its engine with it.
    const gone = (p: V1Pod): void => {
      void this.engines?.stop(p.metadata?.uid ?? '').then(() => this.removePodDir(p.metadata?.uid));
    };
    this.reflector = new Reflector<V1Pod>(this.client, '/api/v1/pods', {
      add: handle,
      update: handle,
      delete: gone,
      error: (e) => this.log(`fake kubelet watch: ${e.message}`),
    });
    await this.reflector.start();
  }

  stop(): void {
    this.reflector?.stop();
    for (const t of this.timers.values()) clearTimeout(t);
    void this.engines?.stopAll().then(() => this.removePodsDir());
  }

  /** Stops the watch and waits for every engine process to exit. */
  async stopAndWait(): Promise<void> {
    this.reflector?.stop();
    for (const t of this.timers.values()) clearTimeout(t);
    await this.engines?.stopAll();
    this.removePodsDir();
  }

  private removePodsDir(): void {
    for (const t of this.mountRetry.values()) clearTimeout(t);
    this.mountRetry.clear();
    if (this.podsDir !== undefined) rmSync(this.podsDir, { recursive: true, force: true });
    this.podsDir = undefined;
  }

  private removePodDir(uid: string | undefined): void {
    if (uid === undefined || this.podsDir === undefined) return;
    clearTimeout(this.mountRetry.get(uid));
    this.mountRetry.delete(uid);
    rmSync(join(this.podsDir, uid), { recursive: true, force: true });
  }

  /**
   * The pod's volumes, mounted before its containers start: per container, mount paths mapped to this machine. A
   * failed mount leaves the pod Pending (ContainerCreating, a FailedMount Event) and is retried; undefined then.
   */
  private async mountVolumes(p: V1Pod, path: string, uid: string): Promise<ReadonlyMap<string, Readonly<Record<string, string>>> | undefined> {
    const claims = this.opts.claims;
    if (!(p.spec?.volumes ?? []).some((v) => v.configMap !== undefined || (claims !== undefined && v.persistentVolumeClaim !== undefined))) return new Map();
    // A retry is already due (this is the pod's own status patch coming back): one attempt, one Event per period.
    if (this.mountRetry.has(uid)) return undefined;
    this.podsDir ??= mkdtempSync(join(tmpdir(), 'sits-fake-kubelet-'));
    const podDir = join(this.podsDir, uid);
    const cms = await materializeConfigMapVolumes(this.client, p, podDir);
    const r = !cms.ok || claims === undefined ? cms : mergeMounts(cms.mounts, await materializeClaimVolumes(this.client, p, podDir, claims));
    if (r.ok) return r.mounts;
    const message = `MountVolume.SetUp failed for volume "${r.volume}" : ${r.reason}`;
    this.log(`fake kubelet ${path}: ${message}`);
    const ns = p.metadata?.namespace ?? 'default';
    const now = new Date().toISOString();
    const waiting = (p.spec?.containers ?? []).map((c) => ({
      name: c.name,
      image: c.image ?? '',
      imageID: '',
      ready: false,
      started: false,
      restartCount: 0,
      state: { waiting: { reason: 'ContainerCreating' } },
    }));
    await this.client
      .request('PATCH', `${path}/status`, { contentType: SMP, body: { metadata: { uid }, status: { containerStatuses: waiting } } })
      .catch((e: Error) => this.log(`fake kubelet ${path}: ${e.message}`));
    await this.client
      .post(`/api/v1/namespaces/${ns}/events`, {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { generateName: `${p.metadata?.name ?? 'pod'}.`, namespace: ns },
        involvedObject: { apiVersion: 'v1', kind: 'Pod', name: p.metadata?.name, namespace: ns, uid },
        reason: 'FailedMount',
        message,
        type: 'Warning',
        source: { component: 'kubelet', host: p.spec?.nodeName },
        firstTimestamp: now,
        lastTimestamp: now,
        count: 1,
      })
      .catch((e: Error) => this.log(`fake kubelet ${path}: event: ${e.message}`));
    // The kubelet's volume manager retries; the latest copy of the pod is handled again.
    clearTimeout(this.mountRetry.get(uid));
    this.mountRetry.set(
      uid,
      setTimeout(() => {
        this.mountRetry.delete(uid);
        const latest = this.reflector?.items.get(objectKey(p));
        if (latest?.metadata?.uid === uid) void this.reconcile(latest);
      }, 2000),
    );
    return undefined;
  }

  /**
   * An engine pod (llamacpp, vllm): Running at once with its pod IP but not Ready; the engine starts on that IP and the prober
   * flips Ready (and the containers' ready) with /health, as the kubelet does from the readinessProbe.
   */
  private async startEngine(p: V1Pod, path: string, uid: string | undefined): Promise<void> {
    const engines = this.engines as EnginePods;
    if (uid === undefined || engines.has(uid)) return;
    const volumes = await this.mountVolumes(p, path, uid);
    if (volumes === undefined || engines.has(uid)) return;
    const ip = engines.allocateIp();
    const startedAt = new Date().toISOString();
    const containers = p.spec?.containers ?? [];
    const key = objectKey(p);
    const status = (ready: boolean): Record<string, unknown> => {
      const now = new Date().toISOString();
      // The gates as the pod says now (the watch's latest copy), not as it was when the engine started.
      const latest = this.reflector?.items.get(key) ?? p;
      return {
        metadata: { uid },
        status: {
          phase: 'Running',
          podIP: ip,
          podIPs: [{ ip }],
          hostIP: '127.0.0.1',
          startTime: startedAt,
          conditions: readyConditions(latest, ready, now, startedAt),
          containerStatuses: containers.map((c) => ({
            name: c.name,
            image: c.image ?? '',
            imageID: '',
            ready,
            started: true,
            restartCount: 0,
            state: { running: { startedAt } },
          })),
        },
      };
    };
    await this.client.request('PATCH', `${path}/status`, { contentType: SMP, body: status(false) });
    this.stats.started++;
    // A side container's exit ends the pod (restartPolicy Never, as batch workers have): Failed unless it exited 0.
    const ended = (code: number): void => {
      // The engine goes with it (no prober flipping the ended pod back to Running).
      void engines.stop(uid);
      const now = new Date().toISOString();
      const body = {
        metadata: { uid },
        status: {
          phase: code === 0 ? 'Succeeded' : 'Failed',
          conditions: [{ type: 'Ready', status: 'False', reason: code === 0 ? 'PodCompleted' : 'PodFailed', lastTransitionTime: now }],
          containerStatuses: containers.map((c) => ({
            name: c.name,
            image: c.image ?? '',
            imageID: '',
            ready: false,
            started: false,
            restartCount: 0,
            state: { terminated: { exitCode: code, reason: code === 0 ? 'Completed' : 'Error', finishedAt: now } },
          })),
        },
      };
      this.client
        .request('PATCH', `${path}/status`, { contentType: 'application/merge-patch+json', body })
        .catch((e: Error) => this.log(`fake kubelet ${path}: exit ${code}: ${e.message}`));
      this.stats.finished++;
    };
    engines.start(
      uid,
      p,
      ip,
      (ready) => {
        this.client
          .request('PATCH', `${path}/status`, { contentType: SMP, body: status(ready) })
          .catch((e: Error) => this.log(`fake kubelet ${path}: readiness ${ready}: ${e.message}`));
      },
      ended,
      volumes,
    );
  }

  /** Milliseconds its run-seconds annotation leaves a running pod (0: up; -1: none or malformed). */
  private runLeftMs(p: V1Pod): number {
    const own = p.metadata?.annotations?.[RUN_SECONDS_ANNOTATION];
    const sec = own === undefined ? (this.opts.defaultRunSeconds?.(p) ?? Number.NaN) : Number(own);
    const start = Date.parse(String(p.status?.startTime ?? ''));
    if (!Number.isFinite(sec) || sec < 0 || Number.isNaN(start)) return -1;
    return Math.max(0, start + sec * 1000 - Date.now());
  }

  private async reconcile(p: V1Pod): Promise<void> {
    const node = p.spec?.nodeName ?? '';
    if (node === '' || !this.isFakeNode(node)) return;
    const key = objectKey(p);
    if (this.busy.has(key)) {
      this.again.set(key, p);
      return;
    }
    this.busy.add(key);
    const path = `/api/v1/namespaces/${p.metadata?.namespace ?? 'default'}/pods/${p.metadata?.name ?? ''}`;
    try {
      // Every write names the pod's uid: a pod seen late may have been replaced by a new one of the same name (the
      // upstream e2e suite deletes and recreates pods by name at once), which must not be deleted or started for it.
      const uid = p.metadata?.uid;
      if (p.metadata?.deletionTimestamp !== undefined) {
        await this.engines?.stop(uid ?? '');
        this.removePodDir(uid);
        await this.client.request('DELETE', path, {
          body: { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 0, ...(uid === undefined ? {} : { preconditions: { uid } }) },
        });
        this.stats.deleted++;
        return;
      }
      const phase = p.status?.phase ?? 'Pending';
      const exit = p.metadata?.annotations?.[EXIT_CODE_ANNOTATION];
      const now = new Date().toISOString();
      const containers = p.spec?.containers ?? [];
      const wantReady = p.metadata?.annotations?.[READY_ANNOTATION] !== 'false';
      const isReady = p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
      // The containers' readiness (the prober's verdict); pods written before ContainersReady existed: Ready.
      const cr = p.status?.conditions?.find((c) => c.type === 'ContainersReady');
      const containersReady = cr === undefined ? isReady : cr.status === 'True';
      if (phase === 'Pending' && this.engines?.matches(p) === true) {
        await this.startEngine(p, path, uid);
      } else if (phase === 'Pending') {
        // Pod IPs from 10.244.0.0/14 (kind's pod range), outside the Service CIDR (10.0.0.0/24): EndpointSlices list them.
        const ip = `10.${244 + ((this.ipSeq >> 16) & 3)}.${(this.ipSeq >> 8) & 255}.${this.ipSeq & 255}`;
        this.ipSeq++;
        await this.client.request('PATCH', `${path}/status`, {
          contentType: SMP,
          body: {
            ...(uid === undefined ? {} : { metadata: { uid } }),
            status: {
              phase: 'Running',
              podIP: ip,
              podIPs: [{ ip }],
              hostIP: '10.255.0.1',
              startTime: now,
              conditions: readyConditions(p, wantReady, now),
              containerStatuses: containers.map((c) => ({
                name: c.name,
                image: c.image ?? '',
                imageID: '',
                ready: wantReady,
                started: true,
                restartCount: 0,
                state: { running: { startedAt: now } },
              })),
            },
          },
        });
        this.stats.started++;
      } else if (phase === 'Running' && this.runLeftMs(p) > 0) {
        // Not yet: woken once when its run time is up (the watch sends nothing then).
        if (!this.timers.has(key)) {
          this.timers.set(
            key,
            setTimeout(() => {
              this.timers.delete(key);
              void this.reconcile(p);
            }, this.runLeftMs(p)),
          );
        }
      } else if (phase === 'Running' && (exit !== undefined || this.runLeftMs(p) === 0)) {
        const code = Number(exit ?? '0');
        const termination = p.metadata?.annotations?.[TERMINATION_MESSAGE_ANNOTATION];
        await this.client.request('PATCH', `${path}/status`, {
          contentType: 'application/merge-patch+json',
          body: {
            ...(uid === undefined ? {} : { metadata: { uid } }),
            status: {
              phase: code === 0 ? 'Succeeded' : 'Failed',
              conditions: [{ type: 'Ready', status: 'False', reason: code === 0 ? 'PodCompleted' : 'PodFailed', lastTransitionTime: now }],
              containerStatuses: containers.map((c, i) => ({
                name: c.name,
                image: c.image ?? '',
                imageID: '',
                ready: false,
                started: false,
                restartCount: 0,
                state: {
                  terminated: {
                    exitCode: code,
                    reason: code === 0 ? 'Completed' : 'Error',
                    finishedAt: now,
                    ...(i === 0 && termination !== undefined ? { message: termination } : {}),
                  },
                },
              })),
            },
          },
        });
        this.stats.finished++;
      } else if (phase === 'Running' && p.metadata?.annotations?.[READY_ANNOTATION] !== undefined && wantReady !== containersReady) {
        // Only pods that carry the annotation: a pod whose status someone else writes is left alone.
        const startedAt = p.status?.startTime === undefined ? now : new Date(p.status.startTime).toISOString();
        await this.client.request('PATCH', `${path}/status`, {
          contentType: SMP,
          body: {
            ...(uid === undefined ? {} : { metadata: { uid } }),
            status: {
              conditions: readyConditions(p, wantReady, now),
              containerStatuses: containers.map((c) => ({
                name: c.name,
                image: c.image ?? '',
                imageID: '',
                ready: wantReady,
                started: true,
                restartCount: 0,
                state: { running: { startedAt } },
              })),
            },
          },
        });
      } else if (phase === 'Running' && (p.spec?.readinessGates?.length ?? 0) > 0) {
        // A readiness gate's condition changed (someone else writes it): Ready follows, as the kubelet's status sync does.
        const want = podReadyCondition(p, containersReady, now);
        if (want.status !== (isReady ? 'True' : 'False')) {
          await this.client.request('PATCH', `${path}/status`, {
            contentType: SMP,
            body: { ...(uid === undefined ? {} : { metadata: { uid } }), status: { conditions: [want] } },
          });
        }
      }
    } catch (e) {
      this.log(`fake kubelet ${key}: ${(e as Error).message}`);
    } finally {
      this.busy.delete(key);
      const next = this.again.get(key);
      if (next !== undefined) {
        this.again.delete(key);
        void this.reconcile(next);
      }
    }
  }
}
