/**
 * The BatchJobsPort of the BatchInferenceJob controller on a real file system: the controller mounts the claims
 * its jobs read and write (docs/adr/0102-batch-worker-protocol.md: the coordinator commits, so it needs the output
 * volume; in dev mode a claim is a local folder). A job's session is opened in the background: the input is
 * streamed and checked line by line (live/batch/batch-files.ts), the coordinator resumes from the output's manifest, and an
 * invalid input leaves a manifest saying partial with the errors, so nobody mistakes the empty output for a result.
 */
import { existsSync, lstatSync, realpathSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import type { BatchJobsPort, JobSession, SessionState } from '../../controllers/batch-inference/controller.ts';
import { BatchCoordinator, deriveShardRecords, MANIFEST, outputOwnerConflict } from '../../controllers/batch-inference/coordinator.ts';
import { DEFAULT_LADDER } from '../../controllers/batch-inference/fault-ladder.ts';
import { DEFAULT_LONG_TAIL } from '../../controllers/batch-inference/long-tail.ts';
import type { BatchJobObject } from '../../controllers/batch-inference/pods.ts';
import { MemoryQuarantine, type Quarantine, type QuarantineEntry } from '../../controllers/batch-inference/quarantine.ts';
import { parsePvcUri } from '../../api/data-uri.ts';
import { FsOutputStore, readBatchInput } from './batch-files.ts';

export interface BatchVolumes {
  /** Claim name (in the job's namespace) → where it is mounted in this process; undefined: not mounted here. */
  readonly claim: (namespace: string, claim: string) => string | undefined;
}

/**
 * Claims mounted under one folder, `<root>/<namespace>/<claim>` (issue 36): a claim is a namespaced object, so the
 * same claim name in two namespaces is two folders, and a job reaches only its own namespace's.
 */
export const claimsUnder = (root: string): BatchVolumes => ({ claim: (ns, claim) => join(root, ns, claim) });

export type Resolved =
  { readonly ok: true; readonly path: string } | { readonly ok: false; readonly reason: 'PathOutsideClaim' | 'VolumeUnavailable'; readonly message: string };

/**
 * Where `uri` of a job in `ns` is in this process, checked to stay inside the claim's folder after symlinks: the URI
 * parser refuses `..` and friends, and the real path of the longest existing prefix must be under the claim's real
 * folder (a symlink the tenant planted in the claim, pointing out, is refused). What does not exist yet (an output
 * folder) is created later below that checked prefix.
 */
export function resolveInClaim(volumes: BatchVolumes, ns: string, uri: string): Resolved {
  const loc = parsePvcUri(uri);
  if (!loc.ok) return { ok: false, reason: 'PathOutsideClaim', message: `${uri}: ${loc.reason}` };
  const dir = volumes.claim(ns, loc.claim);
  if (dir === undefined || !existsSync(dir))
    return { ok: false, reason: 'VolumeUnavailable', message: `the controller does not mount claim ${ns}/${loc.claim} of ${uri}` };
  const root = realpathSync(dir);
  const target = join(root, loc.path);
  let existing = target;
  // lstat, not exists: a dangling link is found here and refused below, not walked past and followed later.
  while (lstatSync(existing, { throwIfNoEntry: false }) === undefined && existing !== root) existing = dirname(existing);
  let real: string;
  try {
    real = realpathSync(existing);
  } catch {
    real = ''; // a dangling link: refused like one that points out
  }
  if (real !== root && !real.startsWith(root + sep))
    return { ok: false, reason: 'PathOutsideClaim', message: `${uri}: resolves outside claim ${ns}/${loc.claim} (a symlink points out)` };
  return { ok: true, path: join(real, relative(existing, target)) };
}

/** The quarantine the jobs' fault ladders share (live/batch/batch-quarantine.ts on a cluster; in memory otherwise). */
export type SharedQuarantine = Quarantine & { active(nowMs: number): QuarantineEntry[]; published?(device: string): boolean };

export function fsBatchJobs(
  volumes: BatchVolumes,
  log: (m: string) => void = () => undefined,
  quarantine: SharedQuarantine = new MemoryQuarantine(),
): BatchJobsPort {
  const sessions = new Map<string, SessionState>();
  const openJob = async (job: BatchJobObject, nowMs: number): Promise<SessionState> => {
    const ns = job.metadata.namespace ?? 'default';
    const uid = job.metadata.uid ?? '';
    const inputAt = resolveInClaim(volumes, ns, job.spec.input.uri);
    const outputAt = resolveInClaim(volumes, ns, job.spec.output.uri);
    const bad = !inputAt.ok ? inputAt : !outputAt.ok ? outputAt : undefined;
    if (bad !== undefined)
      return bad.reason === 'PathOutsideClaim' ? { state: 'refused', reason: bad.reason, message: bad.message } : { state: 'error', message: bad.message };
    if (!inputAt.ok || !outputAt.ok) return { state: 'error', message: 'unresolved' }; // narrowed above
    const input = inputAt.path;
    const output = outputAt.path;
    const store = new FsOutputStore(output);
    // Before any write or delete: the output must be empty or this job's (its UID in the manifest).
    const conflict = outputOwnerConflict(store, uid);
    if (conflict !== undefined) return { state: 'refused', reason: 'OutputOwnedByAnotherJob', message: `${job.spec.output.uri}: ${conflict}` };
    const read = await readBatchInput(input);
    if (!read.ok) {
      // The file name users see is the job's, not this process's mount.
      const errors = read.errors.map((e) => e.split(input).join(job.spec.input.uri));
      store.writeAtomic(
        MANIFEST,
        `${JSON.stringify({ version: 1, jobUid: uid, total: 0, epoch: 0, state: 'partial', parts: [], missing: [], reason: `input rejected: ${errors.join('; ')}` })}\n`,
      );
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
