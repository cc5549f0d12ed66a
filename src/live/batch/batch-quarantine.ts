/**
 * The BatchInferenceJob fault ladder's Quarantine port on the one quarantine SITS has (core/health/quarantine.ts):
 * a device the ladder quarantines is written into its Node's ANNOTATION.gpuQuarantine with source
 * `batch-fault-ladder` and state `failed` (ADR 0150), so the scheduler stops placing there (kube/cache/labels.ts marks
 * the GPU unhealthy with the reason, which `sits explain` shows), the node agent's device plugin reports it
 * Unhealthy to the kubelet (node/quarantine-watch.ts, ADR 0128) and the GPU health monitor releases it after a
 * passing health check. The controller keeps its own copy for the coordinator's synchronous questions;
 * `published` says whether the Node carries it yet (a replacement worker must not be created before the scheduler
 * can see the quarantine).
 * A device is `node/index` or `node/i,j` (a worker holding several GPUs: each is quarantined); `node/cpu` is
 * kept in memory only (there is nothing to annotate).
 */
import type { V1Node } from '@kubernetes/client-node';
import { ANNOTATION } from '../../api/wire.ts';
import { formatQuarantine, parseQuarantine, QuarantineBook } from '../../core/health/quarantine.ts';
import type { Quarantine, QuarantineEntry } from '../../controllers/batch-inference/quarantine.ts';
import { isStatus, type KubeClient } from '../../kube/client/client.ts';

export const BATCH_QUARANTINE_SOURCE = 'batch-fault-ladder';

/** `node/3` → node and GPU indices; undefined for a CPU device or anything else. */
export function deviceGpus(device: string): { node: string; gpus: number[] } | undefined {
  const i = device.lastIndexOf('/');
  if (i <= 0) return undefined;
  const gpus = device.slice(i + 1).split(',');
  if (gpus.some((g) => !/^\d+$/.test(g))) return undefined;
  return { node: device.slice(0, i), gpus: gpus.map(Number) };
}

export class NodeAnnotationQuarantine implements Quarantine {
  private readonly entries = new Map<string, QuarantineEntry>();
  private readonly written = new Set<string>();
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly client: KubeClient,
    private readonly log: (m: string) => void = () => undefined,
    private readonly clock: () => number = Date.now,
  ) {}

  quarantine(device: string, reason: string, untilMs: number): void {
    const prev = this.entries.get(device);
    this.entries.set(device, { device, reason, untilMs: Math.max(untilMs, prev?.untilMs ?? untilMs) });
    this.written.delete(device);
    const d = deviceGpus(device);
    if (d === undefined) return;
    // One write at a time: two devices of one node quarantined together must not overwrite each other.
    this.chain = this.chain.then(() => this.write(device, d.node, d.gpus, reason, untilMs));
  }

  isQuarantined(device: string, nowMs: number): boolean {
    const e = this.entries.get(device);
    return e !== undefined && nowMs < e.untilMs;
  }

  /** Whether the device's quarantine is on its Node (where the scheduler and the device plugin read it). */
  published(device: string): boolean {
    return this.written.has(device) || deviceGpus(device) === undefined;
  }

  active(nowMs: number): QuarantineEntry[] {
    return [...this.entries.values()].filter((e) => nowMs < e.untilMs).sort((a, b) => a.device.localeCompare(b.device));
  }

  /** Resolves when every quarantine asked for so far has been written (or its write failed and was logged). */
  flush(): Promise<void> {
    return this.chain;
  }

  private async write(device: string, node: string, gpus: readonly number[], reason: string, untilMs: number): Promise<void> {
    const path = `/api/v1/nodes/${encodeURIComponent(node)}`;
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        const n = await this.client.get<V1Node>(path);
        const have = n.metadata?.annotations?.[ANNOTATION.gpuQuarantine];
        const book = new QuarantineBook();
        if (have !== undefined) {
          const q = parseQuarantine(node, have);
          // Another writer's malformed annotation is theirs to fix: overwriting it would lose their quarantines.
          if (!q.ok) {
            this.log(`batch fault ladder: node ${node}: annotation ${ANNOTATION.gpuQuarantine}: ${q.error}; ${device} is quarantined for this controller only`);
            return;
          }
          book.load(q.value);
        }
        const nowMs = this.clock();
        // `failed` (ADR 0150): work on it has already failed, so nothing on it is asked for a checkpoint first.
        for (const gpu of gpus) book.quarantine({ node, gpu }, `batch job fault ladder: ${reason}`, untilMs, nowMs, BATCH_QUARANTINE_SOURCE, 'failed');
        const want = formatQuarantine(book.ofNode(node));
        if (want !== have)
          await this.client.mergePatch(path, {
            metadata: { resourceVersion: n.metadata?.resourceVersion, annotations: { [ANNOTATION.gpuQuarantine]: want ?? null } },
          });
        this.written.add(device);
        this.log(`batch fault ladder: node ${node} GPU ${gpus.join(',')} quarantined until ${new Date(untilMs).toISOString()}: ${reason}`);
        return;
      } catch (e) {
        // A concurrent writer (the health monitor) changed the node: read it again.
        if (isStatus(e, 409) && attempt < 4) continue;
        this.log(`batch fault ladder: writing the quarantine of ${device} on node ${node}: ${(e as Error).message}; quarantined for this controller only`);
        return;
      }
    }
  }
}
