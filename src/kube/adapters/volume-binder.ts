/**
 * kube-scheduler's VolumeBinding PreBind, live (ADR 0070): before a pod's Binding, the choices its allocation
 * carries are written — a static PV is pre-bound to the claim (spec.claimRef with the claim's uid, annotation
 * `pv.kubernetes.io/bound-by-controller: yes`, as kube's GetBindVolumeToClaim makes it), a claim to provision gets
 * `volume.kubernetes.io/selected-node` — each as a merge patch with the object's resourceVersion as precondition
 * (a PV someone else took meanwhile is a conflict, not overwritten). Then it waits, on the watched objects, until
 * kube-controller-manager's PV controller has bound every claim (spec.volumeName and `pv.kubernetes.io/bind-completed`),
 * as kube's checkBindings does: a PV whose claimRef was dropped, a claim whose selected-node was removed (the
 * provisioner failed) or a deleted pod fails at once, silence fails after the timeout. A failure sends the pods back
 * to the queue (their assumed allocations, and with them the PV choices, are forgotten); nothing written is undone,
 * as in kube (the PV controller unbinds a PV pre-bound to a claim that bound elsewhere).
 */
import type { BindRequest } from '../../core/ports.ts';
import type { AllocationVolumes } from '../../core/snapshot/volume-catalog.ts';
import { ANN_BOUND_BY_CONTROLLER, ANN_SELECTED_NODE } from '../../api/storage.ts';
import type { KubeClient } from '../client/client.ts';
import type { ClusterCache } from '../cache/cluster-cache.ts';
import { splitKey } from '../client/in-flight.ts';

/** kube-scheduler's default VolumeBindingArgs.bindTimeoutSeconds. */
export const VOLUME_BIND_TIMEOUT_MS = 600_000;
const POLL_MS = 200;

interface Written {
  readonly podId: string;
  readonly node: string;
  readonly kind: 'bind' | 'provision';
  readonly claim: string;
  readonly pv?: string;
  /** resourceVersion our patch produced: the watch must reach it before the object is judged. */
  readonly rv: string;
}

export interface VolumePreBinderOptions {
  readonly log: (m: string) => void;
  readonly timeoutMs: number;
  /** The pods could not get their volumes: forget them and requeue. */
  readonly failed: (podIds: readonly string[], why: string) => void;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const claimPath = (key: string): string => {
  const [ns, name] = splitKey(key);
  return `/api/v1/namespaces/${ns}/persistentvolumeclaims/${name}`;
};
const rvAtLeast = (have: string | undefined, want: string): boolean => {
  try {
    return have !== undefined && BigInt(have) >= BigInt(want);
  } catch {
    return have === want;
  }
};

export class VolumePreBinder {
  constructor(
    private readonly client: KubeClient,
    private readonly cache: ClusterCache,
    private readonly opts: VolumePreBinderOptions,
  ) {}

  private work(requests: readonly BindRequest[]): { r: BindRequest; v: AllocationVolumes }[] {
    const out: { r: BindRequest; v: AllocationVolumes }[] = [];
    for (const r of requests) {
      const v = this.cache.assumedVolumes(r.podId);
      if (v !== undefined && (v.binds.length > 0 || v.provisions.length > 0)) out.push({ r, v });
    }
    return out;
  }

  /** Whether any of these pods has volume choices to write (most have none: no PreBind, no await). */
  needsPreBind(requests: readonly BindRequest[]): boolean {
    return this.work(requests).length > 0;
  }

  /** Writes the choices and waits for the claims to be bound; false (pods requeued) when that failed. */
  async preBind(requests: readonly BindRequest[]): Promise<boolean> {
    const ids = requests.map((r) => r.podId);
    try {
      const written: Written[] = [];
      for (const { r, v } of this.work(requests)) {
        for (const b of v.binds) written.push(await this.preBindVolume(r, b.claim, b.pv));
        for (const c of v.provisions) written.push(await this.selectNode(r, c));
      }
      await this.waitBound(written);
      return true;
    } catch (e) {
      const why = (e as Error).message;
      this.opts.log(`volumes of ${ids.join(', ')}: ${why}`);
      this.opts.failed(ids, why);
      return false;
    }
  }

  private async preBindVolume(r: BindRequest, claim: string, pv: string): Promise<Written> {
    const pvc = this.cache.claimObject(claim);
    const vol = this.cache.volumeObject(pv);
    if (pvc === undefined) throw new Error(`persistentvolumeclaim "${claim}" not found`);
    if (vol === undefined) throw new Error(`persistentvolume "${pv}" not found`);
    const [namespace, name] = splitKey(claim);
    const ref = vol.spec?.claimRef;
    // Already pre-bound to this claim (by its author): kube's GetBindVolumeToClaim writes nothing then.
    const already = ref?.name === name && ref.namespace === namespace && (ref.uid === undefined || ref.uid === '' || ref.uid === pvc.metadata?.uid);
    const out = already
      ? vol
      : await this.client.mergePatch<{ metadata?: { resourceVersion?: string } }>(`/api/v1/persistentvolumes/${pv}`, {
          metadata: { resourceVersion: vol.metadata?.resourceVersion, annotations: { [ANN_BOUND_BY_CONTROLLER]: 'yes' } },
          spec: {
            claimRef: {
              kind: 'PersistentVolumeClaim',
              apiVersion: 'v1',
              namespace,
              name,
              uid: pvc.metadata?.uid,
              resourceVersion: pvc.metadata?.resourceVersion,
            },
          },
        });
    return { podId: r.podId, node: r.node, kind: 'bind', claim, pv, rv: out.metadata?.resourceVersion ?? '0' };
  }

  private async selectNode(r: BindRequest, claim: string): Promise<Written> {
    const pvc = this.cache.claimObject(claim);
    if (pvc === undefined) throw new Error(`persistentvolumeclaim "${claim}" not found`);
    const out = await this.client.mergePatch<{ metadata?: { resourceVersion?: string } }>(claimPath(claim), {
      metadata: { resourceVersion: pvc.metadata?.resourceVersion, annotations: { [ANN_SELECTED_NODE]: r.node } },
    });
    return { podId: r.podId, node: r.node, kind: 'provision', claim, rv: out.metadata?.resourceVersion ?? '0' };
  }

  /** kube's checkBindings, polled on the watched objects until every claim is fully bound. */
  private async waitBound(written: readonly Written[]): Promise<void> {
    const deadline = Date.now() + this.opts.timeoutMs;
    for (;;) {
      if (written.every((w) => this.done(w))) return;
      if (Date.now() > deadline)
        throw new Error(
          `binding volumes: timed out waiting for the PV controller to bind ${written
            .filter((w) => !this.done(w))
            .map((w) => w.claim)
            .join(', ')}`,
        );
      await sleep(POLL_MS);
    }
  }

  /** True when the claim is fully bound; throws when binding can no longer complete. */
  private done(w: Written): boolean {
    if (this.cache.pod(w.podId) === undefined) throw new Error(`pod ${w.podId} does not exist any more`);
    const pvc = this.cache.claimObject(w.claim);
    if (pvc === undefined) throw new Error(`persistentvolumeclaim "${w.claim}" not found`);
    if (w.kind === 'bind') {
      const pv = this.cache.volumeObject(w.pv as string);
      if (pv === undefined) throw new Error(`persistentvolume "${w.pv as string}" not found`);
      if (!rvAtLeast(pv.metadata?.resourceVersion, w.rv)) return false;
      if ((pv.spec?.claimRef?.uid ?? '') === '') throw new Error(`ClaimRef got reset for pv "${w.pv as string}"`);
    } else {
      if (!rvAtLeast(pvc.metadata?.resourceVersion, w.rv)) return false;
      if (pvc.metadata?.annotations?.[ANN_SELECTED_NODE] !== w.node) throw new Error(`provisioning failed for PVC "${w.claim}"`);
    }
    const c = this.cache.claim(w.claim);
    return c !== undefined && c.volumeName !== undefined && c.bindCompleted;
  }
}
