/**
 * The BatchJobsPort of the BatchInferenceJob controller on a real file system: the controller mounts the claims
 * its jobs read and write (docs/adr/0102-batch-worker-protocol.md: the coordinator commits, so it needs the output
 * volume; in dev mode a claim is a local folder). A job's session is opened in the background: the input is
 * streamed and checked line by line (app/batch-files.ts), the coordinator resumes from the output's manifest, and an
 * invalid input leaves a manifest saying partial with the errors, so nobody mistakes the empty output for a result.
 */
import { join } from 'node:path';
import type { BatchJobsPort, JobSession, SessionState } from '../controllers/batch-inference/controller.ts';
import { BatchCoordinator, deriveShardRecords, MANIFEST } from '../controllers/batch-inference/coordinator.ts';
import { DEFAULT_LADDER } from '../controllers/batch-inference/fault-ladder.ts';
import { DEFAULT_LONG_TAIL } from '../controllers/batch-inference/long-tail.ts';
import type { BatchJobObject } from '../controllers/batch-inference/pods.ts';
import { MemoryQuarantine, type Quarantine, type QuarantineEntry } from '../controllers/batch-inference/quarantine.ts';
import { pvcLocation } from '../controllers/batch-inference/worker-protocol.ts';
import { FsOutputStore, readBatchInput } from './batch-files.ts';

export interface BatchVolumes {
  /** Claim name (in the job's namespace) → where it is mounted in this process; undefined: not mounted here. */
  readonly claim: (namespace: string, claim: string) => string | undefined;
}

/** Claims mounted under one folder, `<root>/<claim>` (the controller's pod mounts each batch claim there). */
export const claimsUnder = (root: string): BatchVolumes => ({ claim: (_ns, claim) => join(root, claim) });

/** The quarantine the jobs' fault ladders share (app/batch-quarantine.ts on a cluster; in memory otherwise). */
export type SharedQuarantine = Quarantine & { active(nowMs: number): QuarantineEntry[]; published?(device: string): boolean };

export function fsBatchJobs(volumes: BatchVolumes, log: (m: string) => void = () => undefined, quarantine: SharedQuarantine = new MemoryQuarantine()): BatchJobsPort {
  const sessions = new Map<string, SessionState>();
  const resolve = (ns: string, uri: string): string | undefined => {
    const loc = pvcLocation(uri);
    if (loc === undefined) return undefined;
    const dir = volumes.claim(ns, loc.claim);
    return dir === undefined ? undefined : join(dir, loc.path);
  };
  const openJob = async (job: BatchJobObject, nowMs: number): Promise<SessionState> => {
    const ns = job.metadata.namespace ?? 'default';
    const uid = job.metadata.uid ?? '';
    const input = resolve(ns, job.spec.input.uri);
    const output = resolve(ns, job.spec.output.uri);
    if (input === undefined || output === undefined) return { state: 'error', message: `the controller does not mount the claim of ${input === undefined ? job.spec.input.uri : job.spec.output.uri}` };
    const read = await readBatchInput(input);
    const store = new FsOutputStore(output);
    if (!read.ok) {
      // The file name users see is the job's, not this process's mount.
      const errors = read.errors.map((e) => e.split(input).join(job.spec.input.uri));
      store.writeAtomic(MANIFEST, `${JSON.stringify({ version: 1, jobUid: uid, total: 0, epoch: 0, state: 'partial', parts: [], missing: [], reason: `input rejected: ${errors.join('; ')}` })}\n`);
      return { state: 'rejected', errors, output: `${job.spec.output.uri.replace(/\/+$/, '')}/${MANIFEST}` };
    }
    const s = job.spec;
    const coordinator = BatchCoordinator.open(
      store,
      {
        jobUid: uid,
        records: read.records,
        shardRecords: deriveShardRecords(read.records.length, s.workers, s.sharding.shards),
        ladder: { ...DEFAULT_LADDER, ...s.faultRecovery },
        longTail: { ...DEFAULT_LONG_TAIL, enabled: s.sharding.reshardStragglers, thresholdPct: s.sharding.stragglerThresholdPercent },
        quarantine,
      },
      nowMs,
    );
    log(`batch ${ns}/${job.metadata.name ?? ''}: ${coordinator.events[coordinator.events.length - 1] ?? ''}`);
    // A restarted controller keeps the job's start (the deadline and the ETA count from it).
    const started = job.status?.startTime === undefined ? Number.NaN : Date.parse(job.status.startTime);
    const session: JobSession = {
      coordinator,
      startMs: Number.isNaN(started) ? nowMs : started,
      assigned: new Map(),
      handled: new Set(),
      retries: 0,
      quarantined: (t) => quarantine.active(t).map((e) => e.device),
      published: (d) => quarantine.published?.(d) ?? true,
    };
    return { state: 'ready', session };
  };
  return {
    session(job, nowMs) {
      const uid = job.metadata.uid ?? '';
      const have = sessions.get(uid);
      if (have !== undefined) return have;
      sessions.set(uid, { state: 'loading' });
      openJob(job, nowMs).then(
        (st) => sessions.set(uid, st),
        (e: unknown) => {
          // A manifest of another job, an unreadable volume: reported, and tried again on a later reconcile.
          sessions.set(uid, { state: 'error', message: (e as Error).message });
          setTimeout(() => sessions.delete(uid), 10_000).unref();
        },
      );
      return { state: 'loading' };
    },
  };
}
