import { describe, expect, it } from 'vitest';
import { ANNOTATION } from '../../api/wire.ts';
import type { MigrateIntent } from '../../core/health/monitor.ts';
import { parseQuarantine, type QuarantineEntry } from '../../core/health/quarantine.ts';
import { migrationRequestValue, migrationStep, migrationTargets, parseMigrationRequest } from './health-migration.ts';

const T0 = Date.UTC(2026, 11, 1, 20, 0, 0);
const entry = { node: 'n1', gpu: 3, sinceMs: T0 };
const GRACE = 300_000;
const iso = (ms: number): string => new Date(ms).toISOString();
type Job = Parameters<typeof migrationStep>[0];
const job = (annotations: Record<string, string> = {}, status: Job['status'] = {}, checkpoint = true): Job =>
  ({
    metadata: { name: 'llm', namespace: 'ml', annotations },
    spec: { replicas: 2, ...(checkpoint ? { checkpoint: { volume: { claimName: 'c' }, volumeSnapshotClassName: 'k' } } : {}) },
    status,
  }) as unknown as Job;

describe('migrationStep', () => {
  const req = migrationRequestValue(T0 + 1000, 'n1', 3);
  it('asks for a checkpoint once, naming the device, and reads its request back', () => {
    expect(migrationStep(job(), entry, 'checkpoint-first', T0 + 1000, GRACE)).toEqual({ kind: 'request', value: 'Migration/2026-12-01T20:00:01.000Z/n1/3' });
    expect(parseMigrationRequest(req)).toEqual({ value: req, atMs: T0 + 1000, node: 'n1', gpu: 3 });
    expect(parseMigrationRequest('Preemption/2026-12-01T20:00:01.000Z')).toBeUndefined();
    expect(migrationStep(job({ [ANNOTATION.requestCheckpoint]: req }), entry, 'checkpoint-first', T0 + 5000, GRACE)).toEqual({
      kind: 'wait',
      untilMs: T0 + 1000 + GRACE,
    });
  });
  it('a request for another device, or older than the quarantine, or a preemption request is not this migration', () => {
    for (const other of [migrationRequestValue(T0 + 1000, 'n1', 2), migrationRequestValue(T0 - 1000, 'n1', 3), `Preemption/${iso(T0)}`])
      expect(migrationStep(job({ [ANNOTATION.requestCheckpoint]: other }), entry, 'checkpoint-first', T0 + 2000, GRACE).kind).toBe('request');
  });
  it('evicts once the request is answered Ready, or its cycle failed, or the grace ran out', () => {
    const a = { [ANNOTATION.requestCheckpoint]: req };
    const ready = migrationStep(
      job(a, { checkpoint: { handledRequest: req, lastReady: { snapshotName: 'llm-ckpt-2', step: 200, readyTime: iso(T0 + 3000) } } } as Job['status']),
      entry,
      'checkpoint-first',
      T0 + 4000,
      GRACE,
    );
    expect(ready).toEqual({ kind: 'evict', why: 'checkpoint llm-ckpt-2 (step 200) is ready; the gang restarts elsewhere from it' });
    // A Ready checkpoint older than the request does not count.
    expect(
      migrationStep(
        job(a, { checkpoint: { handledRequest: req, lastReady: { snapshotName: 'llm-ckpt-1', step: 100, readyTime: iso(T0) } } } as Job['status']),
        entry,
        'checkpoint-first',
        T0 + 4000,
        GRACE,
      ).kind,
    ).toBe('wait');
    const failed = migrationStep(
      job(a, {
        checkpoint: {
          handledRequest: req,
          cycle: { seq: 2, request: req, phase: 'Failed', failureReason: 'NeverCommitted' },
          lastReady: { snapshotName: 'llm-ckpt-1', step: 100, readyTime: iso(T0) },
        },
      } as Job['status']),
      entry,
      'checkpoint-first',
      T0 + 4000,
      GRACE,
    );
    expect(failed).toEqual({
      kind: 'evict',
      why: 'the checkpoint asked for failed (NeverCommitted); the gang restarts elsewhere from its newest Ready checkpoint llm-ckpt-1 (step 100)',
    });
    expect(migrationStep(job(a), entry, 'checkpoint-first', T0 + 1000 + GRACE, GRACE)).toEqual({
      kind: 'evict',
      why: 'no checkpoint within the grace of 300 s; the gang restarts elsewhere from no Ready checkpoint yet',
    });
  });
  it('a failed GPU evicts at once (restore-last), even mid-checkpoint, from the newest Ready checkpoint; a job without a checkpoint policy is left running', () => {
    const lastReady = { snapshotName: 'llm-ckpt-1', step: 100, readyTime: iso(T0 - 60_000) };
    expect(migrationStep(job({}, { checkpoint: { lastReady } } as Job['status']), entry, 'restore-last', T0, GRACE)).toEqual({
      kind: 'evict',
      why: 'the GPU failed outright, so the job on it is likely dead and no checkpoint is asked for; the gang restarts elsewhere from its newest Ready checkpoint llm-ckpt-1 (step 100)',
    });
    // A suspect GPU that failed while our checkpoint was pending: no more waiting.
    expect(
      migrationStep(job({ [ANNOTATION.requestCheckpoint]: req }, { checkpoint: { lastReady } } as Job['status']), entry, 'restore-last', T0 + 2000, GRACE).kind,
    ).toBe('evict');
    expect(migrationStep(job({}, {}, false), entry, 'checkpoint-first', T0, GRACE)).toMatchObject({ kind: 'leave' });
  });
});

describe('migrationTargets: the mode of a quarantine read from the Node (ADR 0150)', () => {
  const at = `"since":"${iso(T0)}","until":"${iso(T0 + 900_000)}"`;
  const read = (text: string): QuarantineEntry[] => {
    const q = parseQuarantine('n1', text);
    if (!q.ok) throw new Error(q.error);
    return q.value;
  };
  const intent = (gpu: number, mode: MigrateIntent['mode'], atMs: number): MigrateIntent => ({
    kind: 'checkpoint-and-migrate',
    node: 'n1',
    gpu,
    uuid: '',
    mode,
    reason: `intent ${mode}`,
    pods: [],
    atMs,
  });

  it('failed → restore-last; suspect, or an entry written without a state → checkpoint-first', () => {
    const q = read(
      `{"1":{"reason":"XID 48 (double-bit ECC error)","state":"failed",${at},"source":"gpu-health"},"2":{"reason":"temperature rising","state":"suspect",${at},"source":"gpu-health"},"3":{"reason":"shard failed","since":"${iso(T0)}","until":"${iso(T0 + 900_000)}","source":"batch-fault-ladder"}}`,
    );
    expect(migrationTargets(q, []).map((t) => [t.entry.gpu, t.mode])).toEqual([
      [1, 'restore-last'],
      [2, 'checkpoint-first'],
      [3, 'checkpoint-first'],
    ]);
  });

  it('an in-process intent adds its device or its mode, but never undoes the Node’s failed', () => {
    const q = read(
      `{"1":{"reason":"XID 48 (double-bit ECC error)","state":"failed",${at},"source":"gpu-health"},"2":{"reason":"pages pending retirement","state":"suspect",${at},"source":"gpu-health"}}`,
    );
    const t = migrationTargets(q, [intent(1, 'checkpoint-first', T0 - 5000), intent(2, 'restore-last', T0 + 1000), intent(4, 'checkpoint-first', T0 + 2000)]);
    expect(t).toEqual([
      { entry: q[0], mode: 'restore-last' },
      { entry: { node: 'n1', gpu: 2, sinceMs: T0, reason: 'intent restore-last' }, mode: 'restore-last' },
      { entry: { node: 'n1', gpu: 4, sinceMs: T0 + 2000, reason: 'intent checkpoint-first' }, mode: 'checkpoint-first' },
    ]);
  });
});
