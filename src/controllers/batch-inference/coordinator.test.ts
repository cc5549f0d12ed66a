import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { Assignment, CoordinatorConfig, WorkerInfo } from './coordinator.ts';
import { BatchCoordinator, MANIFEST, ManifestError, OUTPUT, deriveShardRecords } from './coordinator.ts';
import { DEFAULT_LADDER } from './fault-ladder.ts';
import { DEFAULT_LONG_TAIL } from './long-tail.ts';
import type { RecordInfo } from './openai-batch.ts';
import { outputCustomId } from './openai-batch.ts';
import { MemoryOutputStore } from './output-store.ts';
import { partLines, writePart } from './part-writer.ts';
import { MemoryQuarantine } from './quarantine.ts';
import { overlaps } from './ranges.ts';

const records = (n: number): RecordInfo[] =>
  Array.from({ length: n }, (_, i) => ({ customId: `req-${i}`, promptTokens: 100 + (i % 7), maxOutputTokens: 10 + (i % 3) }));
const gpu = (i: number): WorkerInfo => ({ id: `w${i}`, device: `node-${i}/0`, cpu: false, allowsReducedClock: true });
const cpuWorker: WorkerInfo = { id: 'cpu', device: 'node-9/cpu', cpu: true };

function config(n: number, o: Partial<CoordinatorConfig> = {}): CoordinatorConfig {
  return {
    jobUid: 'job-1',
    records: records(n),
    shardRecords: 4,
    ladder: DEFAULT_LADDER,
    longTail: { ...DEFAULT_LONG_TAIL, minObservationMs: 1000, handoffMs: 0, minChunkRecords: 2 },
    quarantine: new MemoryQuarantine(),
    ...o,
  };
}

function outputIds(store: MemoryOutputStore): string[] {
  return (store.read(OUTPUT) ?? '')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => outputCustomId(l) as string);
}

/** Runs every open task to completion on the given workers. */
function drain(c: BatchCoordinator, store: MemoryOutputStore, cfg: CoordinatorConfig, workers: readonly WorkerInfo[], nowMs: number): number {
  let now = nowMs;
  for (let guard = 0; !c.done && guard < 10_000; guard++) {
    let any = false;
    for (const w of workers) {
      const a = c.assign(w, now);
      if (a === undefined) continue;
      any = true;
      writePart(store, cfg.jobUid, cfg.records, a);
      c.complete(a.attemptId, now);
    }
    now += any ? 1000 : 16 * 60_000; // nothing assignable: wait out the quarantines
  }
  return now;
}

describe('BatchCoordinator: checkpoints of a running attempt', () => {
  const prefix = (store: MemoryOutputStore, cfg: CoordinatorConfig, a: Assignment, upTo: number, file: string): string => {
    store.writeAtomic(file, `${partLines(cfg.jobUid, cfg.records, a, { upTo }).join('\n')}\n`);
    return file;
  };
  it('commits the finished prefix, keeps the attempt running, and accepts only the rest at completion', () => {
    const store = new MemoryOutputStore();
    const cfg = config(8, { shardRecords: 8 });
    const c = BatchCoordinator.open(store, cfg, 0);
    const a = c.assign(gpu(0), 0) as Assignment;
    expect(c.checkpoint(a.attemptId, prefix(store, cfg, a, 3, `parts/${a.attemptId}.c1.jsonl`))).toMatchObject({
      kind: 'committed',
      accepted: [{ start: 0, end: 3 }],
    });
    expect(c.committedRanges()).toEqual([{ start: 0, end: 3 }]);
    expect(c.runningAttempts().map((x) => x.id)).toEqual([a.attemptId]);
    expect(c.checkpoint(a.attemptId, prefix(store, cfg, a, 3, `parts/${a.attemptId}.c2.jsonl`))).toMatchObject({ kind: 'discarded' });
    writePart(store, cfg.jobUid, cfg.records, a);
    expect(c.complete(a.attemptId, 1000)).toMatchObject({ kind: 'committed', accepted: [{ start: 3, end: 8 }], discardedRecords: 3 });
    c.finish();
    expect(outputIds(store)).toEqual(cfg.records.map((r) => r.customId));
  });
  it('a worker lost after a checkpoint gives back only the records after it; a restart keeps the checkpoint', () => {
    const store = new MemoryOutputStore();
    const cfg = config(8, { shardRecords: 8 });
    const c = BatchCoordinator.open(store, cfg, 0);
    const a = c.assign(gpu(0), 0) as Assignment;
    c.checkpoint(a.attemptId, prefix(store, cfg, a, 5, `parts/${a.attemptId}.c1.jsonl`));
    c.lost('w0');
    expect(c.uncommitted()).toEqual([{ start: 5, end: 8 }]);
    const c2 = BatchCoordinator.open(store, cfg, 10);
    expect(c2.uncommitted()).toEqual([{ start: 5, end: 8 }]);
    drain(c2, store, cfg, [gpu(1)], 10);
    c2.finish();
    expect(outputIds(store)).toEqual(cfg.records.map((r) => r.customId));
  });
  it("keeps a committed checkpoint seen again after a restart (the worker's report still names it)", () => {
    const store = new MemoryOutputStore();
    const cfg = config(8, { shardRecords: 8 });
    const c = BatchCoordinator.open(store, cfg, 0);
    const a = c.assign(gpu(0), 0) as Assignment;
    const file = prefix(store, cfg, a, 5, `parts/${a.attemptId}.c1.jsonl`);
    expect(c.checkpoint(a.attemptId, file).kind).toBe('committed');
    const c2 = BatchCoordinator.open(store, cfg, 10);
    expect(c2.adopt(a.attemptId, a.range, gpu(0), 0, 5)).toBe('adopted');
    expect(c2.checkpoint(a.attemptId, file)).toMatchObject({ kind: 'discarded', why: `${file} is committed already` });
    expect(store.read(file)).toBeDefined();
    writePart(store, cfg.jobUid, cfg.records, a);
    expect(c2.complete(a.attemptId, 20)).toMatchObject({ kind: 'committed', accepted: [{ start: 5, end: 8 }] });
    c2.finish();
    expect(outputIds(store)).toEqual(cfg.records.map((r) => r.customId));
  });
  it("refuses a checkpoint that is not one: the final part's name, a wrong custom_id, an unknown attempt", () => {
    const store = new MemoryOutputStore();
    const cfg = config(8, { shardRecords: 8 });
    const c = BatchCoordinator.open(store, cfg, 0);
    const a = c.assign(gpu(0), 0) as Assignment;
    expect(c.checkpoint(a.attemptId, a.part).kind).toBe('discarded');
    store.writeAtomic('parts/x.c1.jsonl', `${partLines(cfg.jobUid, cfg.records, { range: { start: 1, end: 3 } }).join('\n')}\n`);
    expect(c.checkpoint(a.attemptId, 'parts/x.c1.jsonl')).toMatchObject({
      kind: 'discarded',
      why: expect.stringContaining('custom_id "req-1", expected "req-0"'),
    });
    expect(store.read('parts/x.c1.jsonl')).toBeUndefined();
    expect(c.checkpoint('e1-a99', prefix(store, cfg, a, 2, 'parts/e1-a99.c1.jsonl')).kind).toBe('discarded');
    expect(c.committedRanges()).toEqual([]);
    expect(c.runningAttempts()).toHaveLength(1);
  });
});

describe('BatchCoordinator: sharding and the commit protocol', () => {
  it('derives the shard size from records and workers when none is given', () => {
    expect(deriveShardRecords(10_000, 4)).toBe(313);
    expect(deriveShardRecords(50, 4)).toBe(16);
    expect(deriveShardRecords(1_000_000, 1)).toBe(4096);
    expect(deriveShardRecords(100, 4, 10)).toBe(10);
  });
  it('runs a job to a complete output, every custom_id once and in input order', () => {
    const store = new MemoryOutputStore();
    const cfg = config(10);
    const c = BatchCoordinator.open(store, cfg, 0);
    drain(c, store, cfg, [gpu(0), gpu(1)], 0);
    expect(c.finish()).toEqual({ state: 'complete', records: 10, missing: [] });
    expect(outputIds(store)).toEqual(cfg.records.map((r) => r.customId));
    expect(JSON.parse(store.read(MANIFEST) as string)).toMatchObject({ state: 'complete', total: 10 });
  });
  it('reports progress: done, failed, total, tokens/s and the expected finish', () => {
    const store = new MemoryOutputStore();
    const cfg = config(8);
    const c = BatchCoordinator.open(store, cfg, 0);
    const a = c.assign(gpu(0), 0) as Assignment;
    writePart(store, cfg.jobUid, cfg.records, a, { refused: new Set([1]) });
    c.complete(a.attemptId, 2000);
    const p = c.status(2000);
    expect(p).toMatchObject({ recordsTotal: 8, recordsProcessed: 4, recordsFailed: 1, shardsCompleted: 1, percent: 50, expectedFinishMs: 4000 });
    // Records 0, 2, 3 answered (record 1 refused): prompts 100 + 102 + 103, outputs 10 + 12 + 10.
    expect(p.tokensProcessed).toBe(305 + 32);
    expect(p.tokensPerSecond).toBeCloseTo(p.tokensProcessed / 2);
  });
  it('resumes after a coordinator restart: recomputes nothing committed, drops the uncommitted part', () => {
    const store = new MemoryOutputStore();
    const cfg = config(12);
    const c1 = BatchCoordinator.open(store, cfg, 0);
    const a = c1.assign(gpu(0), 0) as Assignment;
    const b = c1.assign(gpu(1), 0) as Assignment;
    writePart(store, cfg.jobUid, cfg.records, a);
    c1.complete(a.attemptId, 1000);
    writePart(store, cfg.jobUid, cfg.records, b); // written, then the coordinator dies before committing it
    const c2 = BatchCoordinator.open(store, cfg, 2000);
    expect(c2.epoch).toBe(2);
    expect(store.read(b.part)).toBeUndefined();
    expect(c2.committedRanges()).toEqual([a.range]);
    const seen: Assignment[] = [];
    for (let x = c2.assign(gpu(0), 2000); x !== undefined; x = c2.assign(gpu(0), 2000)) seen.push(x);
    expect(seen.every((x) => !overlaps(x.range, a.range))).toBe(true);
    expect(seen.every((x) => x.attemptId.startsWith('e2-'))).toBe(true);
  });
  it('adopts a running attempt after a restart, and discards a zombie it did not adopt', () => {
    const store = new MemoryOutputStore();
    const cfg = config(8);
    const c1 = BatchCoordinator.open(store, cfg, 0);
    const a = c1.assign(gpu(0), 0) as Assignment;
    const z = c1.assign(gpu(1), 0) as Assignment;
    const c2 = BatchCoordinator.open(store, cfg, 1000);
    expect(c2.adopt(a.attemptId, a.range, gpu(0), 0, 2)).toBe('adopted');
    // The zombie's records are open again; the new coordinator gives them out.
    const again = c2.assign(gpu(2), 1000) as Assignment;
    expect(again.range).toEqual(z.range);
    writePart(store, cfg.jobUid, cfg.records, z);
    expect(c2.complete(z.attemptId, 1500)).toMatchObject({ kind: 'discarded' });
    writePart(store, cfg.jobUid, cfg.records, a);
    expect(c2.complete(a.attemptId, 1500)).toMatchObject({ kind: 'committed', accepted: [a.range] });
  });
  it("refuses a part whose lines are not the attempt's records, and retries them", () => {
    const store = new MemoryOutputStore();
    const cfg = config(8);
    const c = BatchCoordinator.open(store, cfg, 0);
    const a = c.assign(gpu(0), 0) as Assignment;
    writePart(store, cfg.jobUid, cfg.records, { ...a, range: { start: 1, end: 5 } });
    expect(c.complete(a.attemptId, 10)).toMatchObject({ kind: 'failed', why: expect.stringContaining(`${a.part}:1: custom_id "req-1", expected "req-0"`) });
    expect(c.committedRanges()).toEqual([]);
    // Rung 1 (same device, half concurrency) for the refused part's records, then the rest.
    expect(c.assign(gpu(0), 20)).toMatchObject({ range: a.range, concurrencyFactor: 0.5 });
  });
  it("refuses another job's or a changed input's manifest", () => {
    const store = new MemoryOutputStore();
    BatchCoordinator.open(store, config(4), 0);
    expect(() => BatchCoordinator.open(store, config(4, { jobUid: 'other' }), 0)).toThrow(ManifestError);
    expect(() => BatchCoordinator.open(store, config(5), 0)).toThrow(/5 records|4 records/);
    store.writeAtomic(MANIFEST, 'garbage');
    expect(() => BatchCoordinator.open(store, config(4), 0)).toThrow(`${MANIFEST}: not JSON`);
  });
  it('a full output volume: the commit fails, nothing is lost, the output is explicitly partial', () => {
    const store = new MemoryOutputStore();
    const cfg = config(8);
    const c = BatchCoordinator.open(store, cfg, 0);
    const a = c.assign(gpu(0), 0) as Assignment;
    writePart(store, cfg.jobUid, cfg.records, a);
    c.complete(a.attemptId, 10);
    const b = c.assign(gpu(0), 10) as Assignment;
    writePart(store, cfg.jobUid, cfg.records, b);
    store.capacityWrites = store.writes; // the volume is full now
    expect(c.complete(b.attemptId, 20)).toMatchObject({ kind: 'failed', why: expect.stringContaining('no space left') });
    expect(c.outputError).toContain('no space left');
    store.capacityWrites = undefined;
    expect(c.finish('output volume full')).toEqual({ state: 'partial', records: 4, missing: [{ start: 4, end: 8 }] });
    expect(JSON.parse(store.read(MANIFEST) as string)).toMatchObject({ state: 'partial', missing: [{ start: 4, end: 8 }], reason: 'output volume full' });
    expect(() => BatchCoordinator.open(store, cfg, 30)).not.toThrow();
  });
});

describe('BatchCoordinator: fault ladder and quarantine', () => {
  it('walks same device at half concurrency → split over other devices (quarantine) → CPU → error lines', () => {
    const store = new MemoryOutputStore();
    const q = new MemoryQuarantine();
    const cfg = config(4, { quarantine: q, ladder: { ...DEFAULT_LADDER, cpuFallback: true } });
    const c = BatchCoordinator.open(store, cfg, 0);
    for (const w of [gpu(1), gpu(2)]) c.register(w);
    const a0 = c.assign(gpu(0), 0) as Assignment;
    expect(a0).toMatchObject({ concurrencyFactor: 1, reducedClock: false });
    c.fail(a0.attemptId, { kind: 'oom', message: 'CUDA out of memory', device: 'node-0/0' }, 100);
    // Rung 1 is pinned to the failing device: another device does not get it.
    expect(c.assign(gpu(1), 100)).toBeUndefined();
    const a1 = c.assign(gpu(0), 100) as Assignment;
    expect(a1).toMatchObject({ range: a0.range, concurrencyFactor: 0.5, reducedClock: true });
    c.fail(a1.attemptId, { kind: 'oom', message: 'CUDA out of memory', device: 'node-0/0' }, 200);
    expect(q.isQuarantined('node-0/0', 200)).toBe(true);
    expect(q.isQuarantined('node-0/0', 200 + 15 * 60_000)).toBe(false);
    expect(q.active(200)[0]?.reason).toContain('oom on node-0/0 at rung 1');
    expect(c.assign(gpu(0), 200)).toBeUndefined();
    const pieces = [c.assign(gpu(1), 200), c.assign(gpu(2), 200)] as Assignment[];
    expect(pieces.map((p) => p.range)).toEqual([
      { start: 0, end: 2 },
      { start: 2, end: 4 },
    ]);
    expect(c.cpuWorkPending()).toBe(false);
    c.fail(pieces[0]!.attemptId, { kind: 'crash', message: 'segfault', device: 'node-1/0' }, 300);
    // Open on the CPU rung: the controller starts its CPU fallback worker for it.
    expect(c.cpuWorkPending()).toBe(true);
    expect(c.faultLog().at(-1)).toMatch(/rung 3: CPU fallback, waiting for a CPU worker \(1 piece\)$/);
    expect(c.assign(gpu(1), 300)).toBeUndefined();
    const onCpu = c.assign(cpuWorker, 300) as Assignment;
    expect(onCpu).toMatchObject({ cpu: true, range: { start: 0, end: 2 } });
    expect(c.faultLog().at(-1)).toBe(`${onCpu.attemptId} [0,2): rung 3: CPU fallback on cpu (node-9/cpu)`);
    expect(c.cpuWorkPending()).toBe(true);
    c.fail(onCpu.attemptId, { kind: 'crash', message: 'killed', device: 'node-9/cpu' }, 400);
    // Given up (error lines): nothing left for a CPU worker.
    expect(c.cpuWorkPending()).toBe(false);
    writePart(store, cfg.jobUid, cfg.records, pieces[1]!);
    c.complete(pieces[1]!.attemptId, 400);
    expect(c.done).toBe(true);
    expect(c.status(400)).toMatchObject({ recordsProcessed: 4, recordsFailed: 2 });
    c.finish();
    const out = (store.read(OUTPUT) as string)
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { custom_id: string; error: { code: string; message: string } | null });
    expect(out.map((o) => o.custom_id)).toEqual(['req-0', 'req-1', 'req-2', 'req-3']);
    expect(out[0]?.error?.code).toBe('shard_failed');
    expect(out[0]?.error?.message).toMatch(/gave up after 3 retries: oom on node-0\/0 at rung 0.*crash on cpu at rung 3/);
  });
  it('a CPU worker takes only CPU-rung work; a CPU attempt lost with its worker stays on the CPU rung', () => {
    const store = new MemoryOutputStore();
    const cfg = config(4, { shardRecords: 2, ladder: { ...DEFAULT_LADDER, cpuFallback: true, splitOnRetry: false } });
    const c = BatchCoordinator.open(store, cfg, 0);
    expect(c.assign(cpuWorker, 0)).toBeUndefined();
    const a0 = c.assign(gpu(0), 0) as Assignment;
    c.fail(a0.attemptId, { kind: 'hardware', message: 'Xid 79', device: 'node-0/0' }, 10);
    // A hardware fault skips rung 1; splitOnRetry off skips rung 2: straight to the CPU.
    expect(c.cpuWorkPending()).toBe(true);
    const onCpu = c.assign(cpuWorker, 20) as Assignment;
    expect(onCpu).toMatchObject({ cpu: true, range: a0.range });
    expect(c.assign(cpuWorker, 20)).toBeUndefined();
    c.lost(cpuWorker.id);
    expect(c.cpuWorkPending()).toBe(true);
    const again = c.assign(cpuWorker, 30) as Assignment;
    expect(again).toMatchObject({ cpu: true, range: a0.range });
    writePart(store, cfg.jobUid, cfg.records, again);
    expect(c.complete(again.attemptId, 40).kind).toBe('committed');
    expect(c.cpuWorkPending()).toBe(false);
  });
  it('a restarted coordinator keeps the ladder: CPU-rung work stays on the CPU, an adopted CPU attempt stays CPU-rung', () => {
    const store = new MemoryOutputStore();
    const cfg = config(6, { shardRecords: 2, ladder: { ...DEFAULT_LADDER, cpuFallback: true, splitOnRetry: false } });
    const c = BatchCoordinator.open(store, cfg, 0);
    const [a0, a1] = [c.assign(gpu(0), 0), c.assign(gpu(1), 0)] as Assignment[];
    c.fail(a0!.attemptId, { kind: 'hardware', message: 'Xid 79', device: 'node-0/0' }, 10);
    c.fail(a1!.attemptId, { kind: 'hardware', message: 'Xid 48', device: 'node-1/0' }, 10);
    const onCpu = c.assign(cpuWorker, 20) as Assignment;
    // The newest failure is first in line.
    expect(onCpu).toMatchObject({ cpu: true, range: a1!.range });
    // Saved at the failure, not at a later commit.
    const saved = JSON.parse(store.read(MANIFEST) as string) as {
      ladder?: { start: number; end: number; rung: { level: number; cpu: boolean; pinDevice?: string; excludeDevices: string[] } }[];
    };
    expect(saved.ladder?.map((e) => [e.start, e.end, e.rung.level, e.rung.cpu])).toEqual([
      [2, 4, 3, true],
      [0, 2, 3, true],
    ]);
    // The controller restarts: a fresh coordinator on the same volume.
    const c2 = BatchCoordinator.open(store, cfg, 30);
    expect(c2.cpuWorkPending()).toBe(true);
    expect(c2.adopt(onCpu.attemptId, onCpu.range, cpuWorker, 20, 0)).toBe('adopted');
    // The other CPU-rung shard is not given to a GPU; only rung-0 work is.
    const g = c2.assign(gpu(2), 30) as Assignment;
    expect(g).toMatchObject({ cpu: false, range: { start: 4, end: 6 } });
    expect(c2.assign(gpu(3), 30)).toBeUndefined();
    const other = c2.assign({ ...cpuWorker, id: 'cpu-b' }, 30) as Assignment;
    expect(other).toMatchObject({ cpu: true, range: a0!.range });
    // The adopted attempt failing again climbs from rung 3 (gives up: error lines), not from rung 0.
    c2.fail(onCpu.attemptId, { kind: 'crash', message: 'killed', device: 'node-9/cpu' }, 40);
    expect(c2.cpuWorkPending()).toBe(true);
    for (const a of [g, other]) {
      writePart(store, cfg.jobUid, cfg.records, a);
      expect(c2.complete(a.attemptId, 50).kind).toBe('committed');
    }
    expect(c2.done).toBe(true);
    expect(c2.status(50)).toMatchObject({ recordsProcessed: 6, recordsFailed: 2 });
    c2.finish();
    expect(outputIds(store)).toEqual(cfg.records.map((r) => r.customId));
    expect((JSON.parse(store.read(MANIFEST) as string) as { ladder?: unknown }).ladder).toBeUndefined();
  });
  it('a malformed ladder entry in the manifest is dropped (its records restart at rung 0), the rest kept', () => {
    const store = new MemoryOutputStore();
    const cfg = config(4, { shardRecords: 2, ladder: { ...DEFAULT_LADDER, cpuFallback: true } });
    BatchCoordinator.open(store, cfg, 0);
    const m = JSON.parse(store.read(MANIFEST) as string) as Record<string, unknown>;
    const rung = {
      level: 3,
      retries: 1,
      concurrencyFactor: 1,
      reducedClock: false,
      excludeDevices: [],
      cpu: true,
      history: ['hardware on node-0/0 at rung 0: Xid 79'],
    };
    store.writeAtomic(
      MANIFEST,
      JSON.stringify({
        ...m,
        ladder: [
          { start: 0, end: 2, rung },
          { start: 2, end: 9, rung },
          { start: 2, end: 4, rung: { ...rung, level: 7 } },
        ],
      }),
    );
    const c = BatchCoordinator.open(store, cfg, 10);
    expect(c.events.some((e) => e.includes('2 malformed fault-ladder entries ignored'))).toBe(true);
    expect(c.assign(gpu(0), 10)).toMatchObject({ cpu: false, range: { start: 2, end: 4 } });
    expect(c.assign(gpu(1), 10)).toBeUndefined();
    expect(c.assign(cpuWorker, 10)).toMatchObject({ cpu: true, range: { start: 0, end: 2 } });
  });
  it('a full volume while writing error lines: reported, nothing committed, no crash', () => {
    const store = new MemoryOutputStore();
    const c = BatchCoordinator.open(store, config(4, { ladder: { ...DEFAULT_LADDER, maxRetries: 0 } }), 0);
    const a = c.assign(gpu(0), 0) as Assignment;
    store.capacityWrites = store.writes;
    expect(() => c.fail(a.attemptId, { kind: 'crash', message: 'x', device: 'node-0/0' }, 1)).not.toThrow();
    expect(c.outputError).toContain('no space left');
    expect(c.committedRanges()).toEqual([]);
    expect(c.pendingTasks()).toBe(1);
  });
  it('a hardware fault skips the same-device retry and quarantines at once', () => {
    const q = new MemoryQuarantine();
    const store = new MemoryOutputStore();
    const c = BatchCoordinator.open(store, config(4, { quarantine: q }), 0);
    c.register(gpu(1));
    const a = c.assign(gpu(0), 0) as Assignment;
    c.fail(a.attemptId, { kind: 'hardware', message: 'Xid 79: GPU has fallen off the bus', device: 'node-0/0' }, 5);
    expect(q.isQuarantined('node-0/0', 6)).toBe(true);
    expect((c.assign(gpu(1), 6) as Assignment).range).toEqual({ start: 0, end: 2 });
  });
  it("a lost worker's records go back without climbing the ladder", () => {
    const store = new MemoryOutputStore();
    const c = BatchCoordinator.open(store, config(4), 0);
    const a = c.assign(gpu(0), 0) as Assignment;
    expect(c.lost('w0')).toEqual([a.attemptId]);
    expect(c.assign(gpu(1), 1)).toMatchObject({ range: a.range, concurrencyFactor: 1 });
  });
});

describe('BatchCoordinator: long-tail breaker', () => {
  it('re-shards a predicted straggler; the copy that loses is cancelled and its lines discarded', () => {
    const store = new MemoryOutputStore();
    const cfg = config(16, { shardRecords: 8 });
    const c = BatchCoordinator.open(store, cfg, 0);
    const fast = c.assign(gpu(0), 0) as Assignment;
    const slow = c.assign(gpu(1), 0) as Assignment;
    writePart(store, cfg.jobUid, cfg.records, fast);
    c.complete(fast.attemptId, 8000); // 1 s a record
    c.progress(slow.attemptId, 2, 0); // 2 records in 8 s: predicted 32 s, over 130 % of 8 s
    const cuts = c.tick(8000, 2);
    expect(cuts).toEqual([{ attemptId: slow.attemptId, cut: 10, why: expect.stringContaining('over 130 %') }]);
    const chunks = [c.assign(gpu(0), 8000), c.assign(gpu(2), 8000)] as Assignment[];
    expect(chunks.map((x) => x.range)).toEqual([
      { start: 10, end: 13 },
      { start: 13, end: 16 },
    ]);
    expect(chunks.every((x) => x.speculativeOf === slow.attemptId)).toBe(true);
    // The straggler ignores the cut and finishes everything first: the chunks lose.
    writePart(store, cfg.jobUid, cfg.records, slow);
    expect(c.complete(slow.attemptId, 9000)).toMatchObject({ kind: 'committed', accepted: [slow.range], cancel: chunks.map((x) => x.attemptId) });
    writePart(store, cfg.jobUid, cfg.records, chunks[0]!);
    expect(c.complete(chunks[0]!.attemptId, 9500)).toMatchObject({ kind: 'discarded' });
    expect(store.read(chunks[0]!.part)).toBeUndefined();
    c.finish();
    expect(outputIds(store)).toEqual(cfg.records.map((r) => r.customId));
  });
  it('a straggler that honours the cut commits its head, the chunks the tail', () => {
    const store = new MemoryOutputStore();
    const cfg = config(16, { shardRecords: 8 });
    const c = BatchCoordinator.open(store, cfg, 0);
    const fast = c.assign(gpu(0), 0) as Assignment;
    const slow = c.assign(gpu(1), 0) as Assignment;
    writePart(store, cfg.jobUid, cfg.records, fast);
    c.complete(fast.attemptId, 8000);
    c.progress(slow.attemptId, 2, 0);
    const [cut] = c.tick(8000, 1);
    const chunk = c.assign(gpu(0), 8000) as Assignment;
    expect(chunk.range).toEqual({ start: 10, end: 16 });
    writePart(store, cfg.jobUid, cfg.records, chunk);
    expect(c.complete(chunk.attemptId, 9000)).toMatchObject({ kind: 'committed' });
    writePart(store, cfg.jobUid, cfg.records, slow, { upTo: cut!.cut - slow.range.start });
    expect(c.complete(slow.attemptId, 9000)).toMatchObject({ kind: 'committed', accepted: [{ start: 8, end: 10 }] });
    expect(c.done).toBe(true);
  });
});

describe('BatchCoordinator: exactly once under any interleaving (property)', () => {
  type Op =
    | { t: 'assign'; w: number }
    | { t: 'progress'; w: number; k: number }
    | { t: 'checkpoint'; w: number }
    | { t: 'finish'; w: number; partial: boolean }
    | { t: 'write-then-crash'; w: number }
    | { t: 'fail'; w: number; kind: 'oom' | 'crash' | 'hardware' }
    | { t: 'lost'; w: number }
    | { t: 'crash'; adopt: boolean }
    | { t: 'tick'; idle: number }
    | { t: 'zombie'; w: number };
  const W = 4;
  const w = fc.integer({ min: 0, max: W - 1 });
  const op: fc.Arbitrary<Op> = fc.oneof(
    { weight: 5, arbitrary: w.map((x) => ({ t: 'assign' as const, w: x })) },
    { weight: 3, arbitrary: fc.record({ t: fc.constant('progress' as const), w, k: fc.integer({ min: 1, max: 6 }) }) },
    { weight: 2, arbitrary: w.map((x) => ({ t: 'checkpoint' as const, w: x })) },
    { weight: 4, arbitrary: fc.record({ t: fc.constant('finish' as const), w, partial: fc.boolean() }) },
    { weight: 1, arbitrary: w.map((x) => ({ t: 'write-then-crash' as const, w: x })) },
    { weight: 1, arbitrary: fc.record({ t: fc.constant('fail' as const), w, kind: fc.constantFrom('oom' as const, 'crash' as const, 'hardware' as const) }) },
    { weight: 1, arbitrary: w.map((x) => ({ t: 'lost' as const, w: x })) },
    { weight: 1, arbitrary: fc.record({ t: fc.constant('crash' as const), adopt: fc.boolean() }) },
    { weight: 1, arbitrary: fc.record({ t: fc.constant('tick' as const), idle: fc.integer({ min: 1, max: 3 }) }) },
    { weight: 1, arbitrary: w.map((x) => ({ t: 'zombie' as const, w: x })) },
  );

  it('every custom_id appears exactly once, and nothing committed is handed out again', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 40 }),
        fc.integer({ min: 1, max: 9 }),
        fc.array(op, { maxLength: 80 }),
        fc.boolean(),
        (n, shard, ops, cpuFallback) => {
          const store = new MemoryOutputStore();
          // A deadline already past: every attempt with progress is a straggler, so ticks re-shard often and
          // stragglers that ignore their cut race the chunks made of their records.
          const longTail = { ...DEFAULT_LONG_TAIL, deadlineMs: 1, minObservationMs: 0, handoffMs: 0, minChunkRecords: 1 };
          const cfg = config(n, { shardRecords: shard, ladder: { ...DEFAULT_LADDER, cpuFallback }, longTail });
          const workers = Array.from({ length: W }, (_, i) => gpu(i));
          let c = BatchCoordinator.open(store, cfg, 0);
          let now = 0;
          const current: (Assignment | undefined)[] = Array.from({ length: W }, () => undefined);
          const done: number[] = Array.from({ length: W }, () => 0);
          const zombies: Assignment[] = [];
          const check = (a: Assignment | undefined): Assignment | undefined => {
            if (a !== undefined) for (const r of c.committedRanges()) expect(overlaps(r, a.range)).toBe(false);
            return a;
          };
          for (const o of ops) {
            now += 1000;
            const a = 'w' in o ? current[o.w] : undefined;
            switch (o.t) {
              case 'assign':
                if (a === undefined) {
                  current[o.w] = check(c.assign(workers[o.w]!, now));
                  done[o.w] = 0;
                }
                break;
              case 'progress':
                if (a !== undefined) {
                  done[o.w] = Math.min(a.range.end - a.range.start, done[o.w]! + o.k);
                  c.progress(a.attemptId, done[o.w]!, 0);
                }
                break;
              case 'checkpoint':
                // The finished prefix committed while the attempt runs on (it may race chunks made of its records).
                if (a !== undefined) {
                  const file = `parts/${a.attemptId}.c${now}.jsonl`;
                  store.writeAtomic(file, `${partLines(cfg.jobUid, cfg.records, a, { upTo: done[o.w]! }).join('\n')}\n`);
                  c.checkpoint(a.attemptId, file);
                }
                break;
              case 'finish':
                if (a !== undefined) {
                  writePart(store, cfg.jobUid, cfg.records, a, o.partial ? { upTo: done[o.w]! } : {});
                  c.complete(a.attemptId, now);
                  current[o.w] = undefined;
                }
                break;
              case 'write-then-crash':
                if (a !== undefined) writePart(store, cfg.jobUid, cfg.records, a);
                c = BatchCoordinator.open(store, cfg, now);
                current.fill(undefined);
                break;
              case 'fail':
                if (a !== undefined) {
                  c.fail(a.attemptId, { kind: o.kind, message: 'injected', device: workers[o.w]!.device }, now);
                  current[o.w] = undefined;
                }
                break;
              case 'lost':
                c.lost(workers[o.w]!.id);
                current[o.w] = undefined;
                break;
              case 'crash':
                c = BatchCoordinator.open(store, cfg, now);
                for (let i = 0; i < W; i++) {
                  const x = current[i];
                  if (x === undefined) continue;
                  if (o.adopt && c.adopt(x.attemptId, x.range, workers[i]!, now, done[i]!) === 'adopted') continue;
                  zombies.push(x);
                  current[i] = undefined;
                }
                break;
              case 'tick':
                c.tick(now, o.idle);
                break;
              case 'zombie': {
                // An attempt the coordinator forgot finishes anyway: its output must not reach the result.
                const z = zombies.pop();
                if (z !== undefined) {
                  writePart(store, cfg.jobUid, cfg.records, z);
                  c.complete(z.attemptId, now);
                }
                break;
              }
            }
          }
          for (const z of zombies) {
            writePart(store, cfg.jobUid, cfg.records, z);
            c.complete(z.attemptId, now);
          }
          for (let i = 0; i < W; i++) {
            const x = current[i];
            if (x === undefined) continue;
            writePart(store, cfg.jobUid, cfg.records, x);
            c.complete(x.attemptId, now);
          }
          drain(c, store, cfg, [...workers, cpuWorker], now);
          expect(c.done).toBe(true);
          c.finish();
          expect(outputIds(store)).toEqual(cfg.records.map((r) => r.customId));
        },
      ),
      { numRuns: 300 },
    );
  });
});
