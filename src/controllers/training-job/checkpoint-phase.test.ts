import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { CHECKPOINT_PHASES, newestReady, retentionDeletes, snapshotLatencyMs, startCheckpoint, stepCheckpoint } from './checkpoint-phase.ts';
import type { CheckpointCycle, CheckpointCyclePolicy, CheckpointObservation, CommittedSnapshot } from './checkpoint-phase.ts';

const DCP: CheckpointCyclePolicy = { writers: 'all-ranks', worldSize: 4, commitTimeoutMs: 600_000, snapshotTimeoutMs: 120_000 };
const T0 = 1_000_000;

function run(cycle: CheckpointCycle, ...obs: CheckpointObservation[]): CheckpointCycle {
  let c = cycle;
  for (const o of obs) c = stepCheckpoint(c, o, DCP).cycle;
  return c;
}

describe('a checkpoint cycle', () => {
  it('goes Pre → SnapshotTrigger the moment the commit arrives, asking for the VolumeSnapshot at once', () => {
    const c = startCheckpoint('llama', 3, 'Periodic', T0);
    const waiting = stepCheckpoint(c, { nowMs: T0 + 1000 }, DCP);
    expect(waiting).toMatchObject({ cycle: { phase: 'Pre' }, actions: [], condition: { status: 'True', reason: 'Pre' }, requeueAfterMs: 599_000 });
    const s = stepCheckpoint(c, { nowMs: T0 + 5000, commit: { seq: 3, step: 1200, ranksWritten: 4 } }, DCP);
    expect(s.cycle).toMatchObject({ phase: 'SnapshotTrigger', step: 1200, committedMs: T0 + 5000, snapshotName: 'llama-ckpt-3' });
    expect(s.actions).toEqual([{ kind: 'createVolumeSnapshot', name: 'llama-ckpt-3', seq: 3, step: 1200 }]);
  });

  it('SnapshotTrigger → PostCommit when readyToUse → Ready once marked committed; the latency is commit → ready', () => {
    const c = run(startCheckpoint('llama', 1, 'Preemption', T0), { nowMs: T0 + 10, commit: { seq: 1, step: 50, ranksWritten: 4 } });
    const pending = stepCheckpoint(c, { nowMs: T0 + 200, snapshot: { readyToUse: false, committed: false } }, DCP);
    expect(pending.actions).toEqual([]);
    expect(pending.condition.reason).toBe('SnapshotTrigger');
    const post = stepCheckpoint(c, { nowMs: T0 + 900, snapshot: { readyToUse: true, committed: false } }, DCP);
    expect(post.cycle.phase).toBe('PostCommit');
    expect(post.actions).toEqual([{ kind: 'markSnapshotCommitted', name: 'llama-ckpt-1', step: 50 }]);
    expect(snapshotLatencyMs(post.cycle)).toBe(890);
    const ready = stepCheckpoint(post.cycle, { nowMs: T0 + 1000, snapshot: { readyToUse: true, committed: true } }, DCP);
    expect(ready).toMatchObject({
      cycle: { phase: 'Ready' },
      actions: [],
      condition: { status: 'False', reason: 'Ready', message: 'checkpoint 1 (preemption) of step 50 is ready as VolumeSnapshot llama-ckpt-1' },
    });
  });

  it('asks for the VolumeSnapshot again while it is not seen (idempotent create)', () => {
    const c = run(startCheckpoint('j', 1, 'Periodic', T0), { nowMs: T0, commit: { seq: 1, step: 5, ranksWritten: 4 } });
    expect(stepCheckpoint(c, { nowMs: T0 + 100 }, DCP).actions).toEqual([{ kind: 'createVolumeSnapshot', name: 'j-ckpt-1', seq: 1, step: 5 }]);
  });

  it('a checkpoint that never commits fails with NeverCommitted at its deadline', () => {
    const s = stepCheckpoint(startCheckpoint('j', 2, 'Periodic', T0), { nowMs: T0 + 600_000 }, DCP);
    expect(s.cycle).toMatchObject({ phase: 'Failed', failure: { reason: 'NeverCommitted' } });
    expect(s.condition).toEqual({
      type: 'Checkpointing',
      status: 'False',
      reason: 'NeverCommitted',
      message: 'checkpoint 2 (periodic) started 600 s ago and never committed (limit 600 s); the last Ready checkpoint is kept',
    });
  });

  it('a commit of an older cycle is not taken for this one', () => {
    expect(stepCheckpoint(startCheckpoint('j', 2, 'Periodic', T0), { nowMs: T0 + 1, commit: { seq: 1, step: 9, ranksWritten: 4 } }, DCP).cycle.phase).toBe(
      'Pre',
    );
  });

  it('DCP: a commit naming fewer ranks than the world fails with IncompleteCommit; DDP rank-0 writing is enough', () => {
    const s = stepCheckpoint(startCheckpoint('j', 1, 'Periodic', T0), { nowMs: T0 + 1, commit: { seq: 1, step: 9, ranksWritten: 3 } }, DCP);
    expect(s.condition).toMatchObject({
      reason: 'IncompleteCommit',
      message: 'checkpoint 1 (periodic) committed step 9 with shards of 3 of 4 ranks (writers: all-ranks); the last Ready checkpoint is kept',
    });
    const ddp = stepCheckpoint(
      startCheckpoint('j', 1, 'Periodic', T0),
      { nowMs: T0 + 1, commit: { seq: 1, step: 9, ranksWritten: 1 } },
      { ...DCP, writers: 'rank0' },
    );
    expect(ddp.cycle.phase).toBe('SnapshotTrigger');
  });

  it('a save the training side reports failed ends the cycle at once: VolumeFull for ENOSPC/EDQUOT naming the volume, WriteFailed otherwise', () => {
    const policy = { ...DCP, volume: 'claim llama-ckpt mounted at /checkpoints' };
    const full = stepCheckpoint(
      startCheckpoint('llama', 4, 'Preemption', T0),
      { nowMs: T0 + 9000, commit: { seq: 4, step: 600, ranksWritten: 0, error: 'No space left on device (ENOSPC): /checkpoints/step-600/__0_0.distcp' } },
      policy,
    );
    expect(full.cycle).toMatchObject({ phase: 'Failed', failure: { reason: 'VolumeFull' } });
    expect(full.condition).toEqual({
      type: 'Checkpointing',
      status: 'False',
      reason: 'VolumeFull',
      message:
        'checkpoint 4 (preemption) of step 600 failed: claim llama-ckpt mounted at /checkpoints is full: No space left on device (ENOSPC): /checkpoints/step-600/__0_0.distcp; the last Ready checkpoint is kept',
    });
    // No snapshot is asked for; one that exists (it cannot, before a commit, but level-triggered) is deleted.
    expect(full.actions).toEqual([]);
    expect(
      stepCheckpoint(
        startCheckpoint('llama', 4, 'Periodic', T0),
        { nowMs: T0, commit: { seq: 4, step: 600, ranksWritten: 0, error: 'Disk quota exceeded (EDQUOT)' }, snapshot: { readyToUse: false, committed: false } },
        policy,
      ).actions,
    ).toEqual([{ kind: 'deleteVolumeSnapshot', name: 'llama-ckpt-4' }]);
    const other = stepCheckpoint(
      startCheckpoint('llama', 5, 'Periodic', T0),
      { nowMs: T0, commit: { seq: 5, step: 700, ranksWritten: 0, error: 'Read-only file system (EROFS)' } },
      policy,
    );
    expect(other.condition).toMatchObject({
      reason: 'WriteFailed',
      message: expect.stringContaining('the training side could not write to claim llama-ckpt mounted at /checkpoints: Read-only file system (EROFS)'),
    });
    // A failure report of an older cycle is not this one's.
    expect(
      stepCheckpoint(startCheckpoint('llama', 6, 'Periodic', T0), { nowMs: T0, commit: { seq: 5, step: 700, ranksWritten: 0, error: 'ENOSPC' } }, policy).cycle
        .phase,
    ).toBe('Pre');
  });

  it('a snapshot error (a missing class, a full volume) is shown at once and fails the cycle at its deadline, deleting the snapshot', () => {
    const c = run(startCheckpoint('j', 4, 'Periodic', T0), { nowMs: T0, commit: { seq: 4, step: 7, ranksWritten: 4 } });
    const err = 'Failed to get snapshot class with error volumesnapshotclass.snapshot.storage.k8s.io "fast" not found';
    const shown = stepCheckpoint(c, { nowMs: T0 + 1000, snapshot: { readyToUse: false, committed: false, errorMessage: err } }, DCP);
    expect(shown).toMatchObject({ cycle: { phase: 'SnapshotTrigger' }, condition: { status: 'True', reason: 'SnapshotError' } });
    expect(shown.condition.message).toContain('"fast" not found');
    const failed = stepCheckpoint(c, { nowMs: T0 + 120_000, snapshot: { readyToUse: false, committed: false, errorMessage: err } }, DCP);
    expect(failed.cycle.failure?.reason).toBe('SnapshotFailed');
    expect(failed.condition.message).toContain('"fast" not found');
    expect(failed.actions).toEqual([{ kind: 'deleteVolumeSnapshot', name: 'j-ckpt-4' }]);
    expect(stepCheckpoint(c, { nowMs: T0 + 120_000 }, DCP).cycle.failure?.reason).toBe('SnapshotNotReady');
  });

  it('a snapshot deleted before it was recorded fails with SnapshotLost', () => {
    const c = run(
      startCheckpoint('j', 1, 'Periodic', T0),
      { nowMs: T0, commit: { seq: 1, step: 1, ranksWritten: 4 } },
      { nowMs: T0 + 1, snapshot: { readyToUse: true, committed: false } },
    );
    expect(stepCheckpoint(c, { nowMs: T0 + 2 }, DCP).cycle.failure?.reason).toBe('SnapshotLost');
  });

  it('moves only forward through the phases, and never leaves Ready or Failed, whatever it observes', () => {
    const order = (p: string): number => (p === 'Failed' ? 99 : CHECKPOINT_PHASES.indexOf(p as (typeof CHECKPOINT_PHASES)[number]));
    const obs = fc.record({
      dt: fc.integer({ min: 0, max: 200_000 }),
      commit: fc.option(fc.record({ seq: fc.integer({ min: 1, max: 3 }), step: fc.nat(1000), ranksWritten: fc.integer({ min: 0, max: 5 }) }), {
        nil: undefined,
      }),
      snapshot: fc.option(fc.record({ readyToUse: fc.boolean(), committed: fc.boolean(), errorMessage: fc.option(fc.string(), { nil: undefined }) }), {
        nil: undefined,
      }),
    });
    fc.assert(
      fc.property(fc.array(obs, { maxLength: 12 }), (steps) => {
        let c = startCheckpoint('j', 2, 'Periodic', 0);
        let now = 0;
        for (const o of steps) {
          now += o.dt;
          const next = stepCheckpoint(
            c,
            {
              nowMs: now,
              ...(o.commit ? { commit: o.commit } : {}),
              ...(o.snapshot
                ? {
                    snapshot: {
                      readyToUse: o.snapshot.readyToUse,
                      committed: o.snapshot.committed,
                      ...(o.snapshot.errorMessage !== undefined ? { errorMessage: o.snapshot.errorMessage } : {}),
                    },
                  }
                : {}),
            },
            DCP,
          );
          if (c.phase === 'Ready' || c.phase === 'Failed') expect(next.cycle).toBe(c);
          expect(order(next.cycle.phase)).toBeGreaterThanOrEqual(order(c.phase));
          // Only a committed step ever reaches Ready.
          if (next.cycle.phase === 'Ready') expect(next.cycle.step).toBeDefined();
          c = next.cycle;
        }
      }),
    );
  });
});

describe('restore point and retention', () => {
  const snaps: CommittedSnapshot[] = [
    { name: 'j-ckpt-1', step: 100, readyMs: 1000 },
    { name: 'j-ckpt-2', step: 200, readyMs: 2000 },
    { name: 'j-ckpt-3', step: 300, readyMs: 3000 },
    { name: 'j-ckpt-4', step: 400, readyMs: 4000 },
  ];

  it('restores from the committed snapshot of the highest step', () => {
    expect(newestReady(snaps)?.name).toBe('j-ckpt-4');
    expect(newestReady([])).toBeUndefined();
  });

  it('keeps the newest N, deletes older than the TTL, and never deletes the restore point', () => {
    expect(retentionDeletes(snaps, { keep: 2 }, 5000)).toEqual(['j-ckpt-2', 'j-ckpt-1']);
    expect(retentionDeletes(snaps, { keep: 10, ttlMs: 2500 }, 5000)).toEqual(['j-ckpt-2', 'j-ckpt-1']);
    // Everything expired: the restore point stays (the job keeps its last good checkpoint).
    expect(retentionDeletes(snaps, { keep: 10, ttlMs: 1 }, 1_000_000)).toEqual(['j-ckpt-3', 'j-ckpt-2', 'j-ckpt-1']);
    expect(retentionDeletes(snaps, { keep: 0 }, 5000)).toEqual(['j-ckpt-3', 'j-ckpt-2', 'j-ckpt-1']);
  });
});
