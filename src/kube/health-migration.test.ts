import { describe, expect, it } from 'vitest';
import { ANNOTATION } from '../api/wire.ts';
import { migrationRequestValue, migrationStep, parseMigrationRequest } from './health-migration.ts';

const T0 = Date.UTC(2026, 11, 1, 20, 0, 0);
const entry = { node: 'n1', gpu: 3, sinceMs: T0 };
const GRACE = 300_000;
const iso = (ms: number): string => new Date(ms).toISOString();
type Job = Parameters<typeof migrationStep>[0];
const job = (annotations: Record<string, string> = {}, status: Job['status'] = {}, checkpoint = true): Job =>
  ({ metadata: { name: 'llm', namespace: 'ml', annotations }, spec: { replicas: 2, ...(checkpoint ? { checkpoint: { volume: { claimName: 'c' }, volumeSnapshotClassName: 'k' } } : {}) }, status }) as unknown as Job;

describe('migrationStep', () => {
  const req = migrationRequestValue(T0 + 1000, 'n1', 3);
  it('asks for a checkpoint once, naming the device, and reads its request back', () => {
    expect(migrationStep(job(), entry, 'checkpoint-first', T0 + 1000, GRACE)).toEqual({ kind: 'request', value: 'Migration/2026-12-01T20:00:01.000Z/n1/3' });
    expect(parseMigrationRequest(req)).toEqual({ value: req, atMs: T0 + 1000, node: 'n1', gpu: 3 });
    expect(parseMigrationRequest('Preemption/2026-12-01T20:00:01.000Z')).toBeUndefined();
    expect(migrationStep(job({ [ANNOTATION.requestCheckpoint]: req }), entry, 'checkpoint-first', T0 + 5000, GRACE)).toEqual({ kind: 'wait', untilMs: T0 + 1000 + GRACE });
  });
  it('a request for another device, or older than the quarantine, or a preemption request is not this migration', () => {
    for (const other of [migrationRequestValue(T0 + 1000, 'n1', 2), migrationRequestValue(T0 - 1000, 'n1', 3), `Preemption/${iso(T0)}`]) expect(migrationStep(job({ [ANNOTATION.requestCheckpoint]: other }), entry, 'checkpoint-first', T0 + 2000, GRACE).kind).toBe('request');
  });
  it('evicts once the request is answered Ready, or its cycle failed, or the grace ran out', () => {
    const a = { [ANNOTATION.requestCheckpoint]: req };
    const ready = migrationStep(job(a, { checkpoint: { handledRequest: req, lastReady: { snapshotName: 'llm-ckpt-2', step: 200, readyTime: iso(T0 + 3000) } } } as Job['status']), entry, 'checkpoint-first', T0 + 4000, GRACE);
    expect(ready).toEqual({ kind: 'evict', why: 'checkpoint llm-ckpt-2 (step 200) is ready; the gang restarts elsewhere from it' });
    // A Ready checkpoint older than the request does not count.
    expect(migrationStep(job(a, { checkpoint: { handledRequest: req, lastReady: { snapshotName: 'llm-ckpt-1', step: 100, readyTime: iso(T0) } } } as Job['status']), entry, 'checkpoint-first', T0 + 4000, GRACE).kind).toBe('wait');
    const failed = migrationStep(job(a, { checkpoint: { handledRequest: req, cycle: { seq: 2, request: req, phase: 'Failed', failureReason: 'NeverCommitted' }, lastReady: { snapshotName: 'llm-ckpt-1', step: 100, readyTime: iso(T0) } } } as Job['status']), entry, 'checkpoint-first', T0 + 4000, GRACE);
    expect(failed).toEqual({ kind: 'evict', why: 'the checkpoint asked for failed (NeverCommitted); the gang restarts elsewhere from its newest Ready checkpoint llm-ckpt-1 (step 100)' });
    expect(migrationStep(job(a), entry, 'checkpoint-first', T0 + 1000 + GRACE, GRACE)).toEqual({ kind: 'evict', why: 'no checkpoint within the grace of 300 s; the gang restarts elsewhere from no Ready checkpoint yet' });
  });
  it('a failed GPU evicts at once (restore-last); a job without a checkpoint policy is left running', () => {
    expect(migrationStep(job(), entry, 'restore-last', T0, GRACE).kind).toBe('evict');
    expect(migrationStep(job({}, {}, false), entry, 'checkpoint-first', T0, GRACE)).toMatchObject({ kind: 'leave' });
  });
});
