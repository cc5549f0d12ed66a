/**
 * The batch coordinator (issue 13, Deliver 2): cuts the input's records into shards, hands them to workers, tracks
 * progress, and commits output so that every custom_id appears exactly once, across worker crashes, preemption,
 * node loss, coordinator restarts, retries and speculative copies. Pure: files go through the OutputStore port,
 * time comes in as arguments, devices leave service through the Quarantine port.
 *
 * The output commit protocol (docs/adr/0099-batch-output-commit-protocol.md):
 *  1. an attempt writes its results, one line per record in input order, to `parts/<attemptId>.jsonl`,
 *     whole or not at all (temp file + rename);
 *  2. the coordinator checks the part (line i is record start+i, by custom_id) and accepts the records of it
 *     not yet committed; it writes manifest.json (atomically) listing the part and the accepted ranges. That
 *     write is the commit point: a part not in the manifest does not exist;
 *  3. on (re)start the coordinator reads the manifest, deletes parts it does not list, bumps the epoch (so
 *     attempt ids never repeat) and re-plans only the records no part accepted;
 *  4. at the end the accepted lines are assembled in input order into output.jsonl and the manifest says
 *     `complete`, or `partial` with the missing ranges; never a short output that looks complete.
 * Accepting "only the uncommitted records" is what makes every race safe: two attempts over the same records
 * (retry, straggler copy, adopted zombie) can both finish; the second's lines are discarded.
 */
import { median } from '../../core/stats.ts';
import type { FailureKind, LadderConfig, Rung } from './fault-ladder.ts';
import { FRESH, nextRung } from './fault-ladder.ts';
import type { LongTailConfig } from './long-tail.ts';
import { planReshards } from './long-tail.ts';
import type { RecordInfo } from './openai-batch.ts';
import { errorLine } from './openai-batch.ts';
import type { OutputStore } from './output-store.ts';
import { OutputWriteError } from './output-store.ts';
import type { Quarantine } from './quarantine.ts';
import type { Range } from './ranges.ts';
import { chunks, covers, fmt, normalise, overlaps, size, subtract, total, union } from './ranges.ts';

export const MANIFEST = 'manifest.json';
export const OUTPUT = 'output.jsonl';
export const partName = (id: string): string => `parts/${id}.jsonl`;

export interface PartEntry {
  readonly file: string;
  /** Line i of the file is record start + i. */
  readonly start: number;
  readonly lines: number;
  /** The records of this part that are in the output. */
  readonly accept: readonly Range[];
  readonly failed: number;
  readonly tokens: number;
}

export type OutputState = 'running' | 'complete' | 'partial';

export interface Manifest {
  readonly version: 1;
  readonly jobUid: string;
  readonly total: number;
  readonly epoch: number;
  readonly state: OutputState;
  readonly parts: readonly PartEntry[];
  /** Set when state is partial: the records not in the output, and why. */
  readonly missing?: readonly Range[];
  readonly reason?: string;
  /**
   * Uncommitted work off rung 0 of the fault ladder, so a restarted coordinator does not send a CPU-rung shard back
   * to the GPUs, nor retry from rung 0 what failed already. Absent in manifests written before it (read as none).
   */
  readonly ladder?: readonly LadderEntry[];
}

/** A range and the rung it is on, as the manifest keeps it (no device pin: the pinned worker may be gone). */
export interface LadderEntry {
  readonly start: number;
  readonly end: number;
  readonly rung: Omit<Rung, 'pinDevice'>;
}

/** History lines kept per manifest entry, and their length: the manifest stays small whatever the faults said. */
const LADDER_HISTORY = 4;
const LADDER_HISTORY_CHARS = 300;

export interface CoordinatorConfig {
  readonly jobUid: string;
  readonly records: readonly RecordInfo[];
  /** Records per shard (deriveShardRecords). */
  readonly shardRecords: number;
  readonly ladder: LadderConfig;
  readonly longTail: LongTailConfig;
  readonly quarantine: Quarantine;
}

export interface WorkerInfo {
  readonly id: string;
  /** `node/index` of its accelerator, or `node/cpu`. */
  readonly device: string;
  readonly cpu: boolean;
  /** A CPU-elastic worker (ADR 0161): on CPU (`cpu` true) yet it takes work of every rung, not only the CPU rung's. */
  readonly elastic?: boolean;
  /** The device takes a lower clock / power limit (rung 1 of the ladder). */
  readonly allowsReducedClock?: boolean;
}

export interface Assignment {
  readonly attemptId: string;
  readonly range: Range;
  readonly part: string;
  readonly concurrencyFactor: number;
  readonly reducedClock: boolean;
  readonly cpu: boolean;
  /** A chunk of a straggler re-sharded by the long-tail breaker. */
  readonly speculativeOf?: string;
}

interface Task {
  readonly range: Range;
  readonly rung: Rung;
  readonly speculativeOf?: string;
}

interface Attempt {
  readonly id: string;
  /** The records it is responsible for (cut short by the long-tail breaker). */
  range: Range;
  /** The records it was given: a straggler that ignores the cut may still write all of them. */
  readonly given: Range;
  readonly part: string;
  readonly rung: Rung;
  readonly worker: WorkerInfo;
  readonly startMs: number;
  done: number;
  tokens: number;
  resharded: boolean;
  readonly speculativeOf?: string;
}

export type CommitResult =
  | { readonly kind: 'committed'; readonly accepted: readonly Range[]; readonly discardedRecords: number; readonly cancel: readonly string[] }
  | { readonly kind: 'discarded'; readonly why: string; readonly cancel: readonly string[] }
  | { readonly kind: 'failed'; readonly why: string };

export interface Progress {
  readonly recordsTotal: number;
  readonly recordsProcessed: number;
  readonly recordsFailed: number;
  readonly tokensProcessed: number;
  readonly shardsTotal: number;
  readonly shardsCompleted: number;
  readonly percent: number;
  readonly tokensPerSecond: number;
  /** Predicted completion from the records rate since this coordinator started; undefined before a rate. */
  readonly expectedFinishMs?: number;
  readonly running: number;
}

export class ManifestError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ManifestError';
  }
}

/**
 * Why `store` is not `jobUid`'s to write (issue 36): a manifest of another job (or not a manifest at all), or parts
 * without a manifest. Undefined: empty, or this job's. Checked before any write or delete of a job's output.
 */
export function outputOwnerConflict(store: OutputStore, jobUid: string): string | undefined {
  const text = store.read(MANIFEST);
  if (text === undefined) {
    const parts = store.list().filter((f) => f.startsWith('parts/')).length;
    return parts === 0 ? undefined : `no ${MANIFEST} but ${parts} parts/ file(s): the output location holds another writer's data`;
  }
  let owner: unknown;
  try {
    owner = (JSON.parse(text) as { jobUid?: unknown } | null)?.jobUid;
  } catch {
    return `${MANIFEST} is not JSON: the output location holds something else`;
  }
  return owner === jobUid
    ? undefined
    : `${MANIFEST} is owned by job ${typeof owner === 'string' ? owner : '?'}, not ${jobUid}: the output location is another job's`;
}

function readManifest(store: OutputStore, cfg: CoordinatorConfig): Manifest | undefined {
  const text = store.read(MANIFEST);
  if (text === undefined) return undefined;
  let m: Manifest;
  try {
    m = JSON.parse(text) as Manifest;
  } catch (e) {
    throw new ManifestError(`${MANIFEST}: not JSON (${(e as Error).message}); the output volume holds something else`);
  }
  if (m.version !== 1 || !Array.isArray(m.parts)) throw new ManifestError(`${MANIFEST}: not a version 1 manifest`);
  if (m.jobUid !== cfg.jobUid) throw new ManifestError(`${MANIFEST}: written by job ${m.jobUid}, not ${cfg.jobUid}: the output location is another job's`);
  if (m.total !== cfg.records.length)
    throw new ManifestError(`${MANIFEST}: ${m.total} records, the input has ${cfg.records.length}: the input changed under the job`);
  return m;
}

/**
 * The manifest's ladder entries that are well formed; the others are dropped (their work restarts at rung 0, which
 * loses nothing: the ladder only narrows where work may run). `dropped` counts them for the events.
 */
export function ladderEntriesOf(raw: unknown, records: number): { entries: LadderEntry[]; dropped: number } {
  if (!Array.isArray(raw)) return { entries: [], dropped: raw === undefined ? 0 : 1 };
  const strings = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === 'string');
  const entries: LadderEntry[] = [];
  for (const e of raw as unknown[]) {
    const x = e as Partial<LadderEntry> | null;
    const r = x?.rung as Partial<Rung> | undefined;
    const ok =
      x !== null &&
      Number.isInteger(x.start) &&
      Number.isInteger(x.end) &&
      0 <= (x.start as number) &&
      (x.start as number) < (x.end as number) &&
      (x.end as number) <= records &&
      r !== undefined &&
      (r.level === 1 || r.level === 2 || r.level === 3) &&
      Number.isInteger(r.retries) &&
      (r.retries as number) >= 0 &&
      typeof r.concurrencyFactor === 'number' &&
      r.concurrencyFactor > 0 &&
      r.concurrencyFactor <= 1 &&
      typeof r.reducedClock === 'boolean' &&
      typeof r.cpu === 'boolean' &&
      strings(r.excludeDevices) &&
      strings(r.history);
    if (ok)
      entries.push({
        start: x.start as number,
        end: x.end as number,
        rung: {
          level: r.level as 1 | 2 | 3,
          retries: r.retries as number,
          concurrencyFactor: r.concurrencyFactor as number,
          reducedClock: r.reducedClock as boolean,
          excludeDevices: r.excludeDevices as string[],
          cpu: r.cpu as boolean,
          history: r.history as string[],
        },
      });
  }
  return { entries, dropped: raw.length - entries.length };
}

/** Shard size with no configuration: about 8 shards a worker (so stragglers and faults cost little), 16..4096 records. */
export function deriveShardRecords(records: number, workers: number, shards?: number): number {
  if (shards !== undefined) return Math.max(1, Math.ceil(records / shards));
  return Math.max(1, Math.min(4096, Math.max(16, Math.ceil(records / (Math.max(1, workers) * 8)))));
}

export class BatchCoordinator {
  readonly epoch: number;
  private parts: PartEntry[];
  private committed: Range[];
  private open: Task[] = [];
  private readonly attempts = new Map<string, Attempt>();
  private readonly devices = new Map<string, WorkerInfo>();
  private seq = 0;
  private state: OutputState;
  private readonly all: Range;
  private readonly openedAtMs: number;
  private readonly recordsAtOpen: number;
  private readonly tokensAtOpen: number;
  private readonly finishedMsPerRecord: number[] = [];
  /** What happened, for status conditions and `sits explain` (newest last, bounded). */
  readonly events: string[] = [];
  private readonly faults: string[] = [];
  outputError: string | undefined;

  private constructor(
    private readonly store: OutputStore,
    private readonly cfg: CoordinatorConfig,
    prev: Manifest | undefined,
    nowMs: number,
  ) {
    this.all = { start: 0, end: cfg.records.length };
    this.epoch = (prev?.epoch ?? 0) + 1;
    this.parts = [...(prev?.parts ?? [])];
    this.committed = normalise(this.parts.flatMap((p) => p.accept));
    this.state = prev?.state === 'complete' ? 'complete' : 'running';
    this.openedAtMs = nowMs;
    this.recordsAtOpen = total(this.committed);
    this.tokensAtOpen = this.parts.reduce((a, p) => a + p.tokens, 0);
  }

  /** Starts or resumes the job on `store`: recomputes nothing committed, deletes what was never committed. */
  static open(store: OutputStore, cfg: CoordinatorConfig, nowMs: number): BatchCoordinator {
    const prev = readManifest(store, cfg);
    // Only this job's manifest licenses deleting parts (readManifest refused another job's): parts without a
    // manifest were written by someone else, since a job writes its manifest before any worker runs.
    const strays = store.list().filter((f) => f.startsWith('parts/'));
    if (prev === undefined && strays.length > 0)
      throw new ManifestError(`no ${MANIFEST} but ${strays.length} parts/ file(s): the output location holds another writer's data`);
    const c = new BatchCoordinator(store, cfg, prev, nowMs);
    const listed = new Set(c.parts.map((p) => p.file));
    for (const f of strays) if (!listed.has(f)) store.remove(f);
    if (c.state !== 'complete') {
      // The fault ladder where the last coordinator left it: those tasks first, the rest of the gaps at rung 0.
      const { entries, dropped } = ladderEntriesOf(prev?.ladder, cfg.records.length);
      for (const e of entries) for (const range of subtract({ start: e.start, end: e.end }, c.committed)) c.open.push({ range, rung: e.rung });
      if (dropped > 0) c.note(`${MANIFEST}: ${dropped} malformed fault-ladder entr${dropped === 1 ? 'y' : 'ies'} ignored; their records restart at rung 0`);
      c.reconcile();
      c.writeManifest(c.parts, 'running');
    }
    c.note(`epoch ${c.epoch}: ${total(c.committed)} of ${cfg.records.length} records committed${prev === undefined ? '' : ' before this start'}`);
    return c;
  }

  get done(): boolean {
    return covers(this.committed, this.all);
  }

  get outputState(): OutputState {
    return this.state;
  }

  /** Records not yet committed. */
  uncommitted(): Range[] {
    return subtract(this.all, this.committed);
  }

  committedRanges(): readonly Range[] {
    return this.committed;
  }

  runningAttempts(): { id: string; range: Range; worker: string; speculativeOf?: string }[] {
    return [...this.attempts.values()].map((a) => ({
      id: a.id,
      range: a.range,
      worker: a.worker.id,
      ...(a.speculativeOf === undefined ? {} : { speculativeOf: a.speculativeOf }),
    }));
  }

  pendingTasks(): number {
    return this.open.length;
  }

  /**
   * Whether work is open or running on the fault ladder's CPU rung (rung 3): what the controller keeps a CPU fallback
   * worker for, and only while it lasts.
   */
  cpuWorkPending(): boolean {
    return this.state === 'running' && (this.open.some((t) => t.rung.cpu) || [...this.attempts.values()].some((a) => a.rung.cpu));
  }

  private note(e: string, fault = false): void {
    this.events.push(e);
    if (this.events.length > 200) this.events.shift();
    if (fault) {
      this.faults.push(e);
      if (this.faults.length > 12) this.faults.shift();
    }
  }

  /** The fault ladder's last steps (failures, rungs, quarantines, give-ups), oldest first: for status. */
  faultLog(): readonly string[] {
    return this.faults;
  }

  private writeManifest(parts: readonly PartEntry[], state: OutputState, extra: { missing?: readonly Range[]; reason?: string } = {}): void {
    const ladder = state === 'running' ? this.ladderEntries() : [];
    const m: Manifest = {
      version: 1,
      jobUid: this.cfg.jobUid,
      total: this.cfg.records.length,
      epoch: this.epoch,
      state,
      parts,
      ...extra,
      ...(ladder.length === 0 ? {} : { ladder }),
    };
    this.store.writeAtomic(MANIFEST, `${JSON.stringify(m)}\n`);
  }

  /** Open and running work off rung 0, for the manifest (uncommitted records only, no device pin, short history). */
  private ladderEntries(): LadderEntry[] {
    const out: LadderEntry[] = [];
    const add = (r: Range, rung: Rung): void => {
      if (rung.level === 0) return;
      const { pinDevice: _pin, ...kept } = rung;
      const history = kept.history.slice(-LADDER_HISTORY).map((h) => h.slice(0, LADDER_HISTORY_CHARS));
      for (const u of subtract(r, this.committed)) out.push({ start: u.start, end: u.end, rung: { ...kept, history } });
    };
    for (const t of this.open) add(t.range, t.rung);
    for (const a of this.attempts.values()) add(a.range, a.rung);
    return out;
  }

  /** Keeps the invariant: every uncommitted record is in an open task or a running attempt. */
  private reconcile(): void {
    this.open = this.open.flatMap((t) => subtract(t.range, this.committed).map((range) => ({ ...t, range })));
    const busy = union(this.committed, [...this.open.map((t) => t.range), ...[...this.attempts.values()].map((a) => a.range)]);
    for (const gap of subtract(this.all, busy)) for (const range of chunks(gap, this.cfg.shardRecords)) this.open.push({ range, rung: FRESH });
  }

  private liveGpuDevices(nowMs: number, except?: string): number {
    return [...this.devices.values()].filter((w) => !w.cpu && w.device !== except && !this.cfg.quarantine.isQuarantined(w.device, nowMs)).length;
  }

  /** A worker joined (its device counts for split width before it asks for work). */
  register(worker: WorkerInfo): void {
    this.devices.set(worker.id, worker);
  }

  /** The next piece of work for `worker`, or undefined (nothing fits it, or its device is quarantined). */
  assign(worker: WorkerInfo, nowMs: number): Assignment | undefined {
    this.devices.set(worker.id, worker);
    if (this.state !== 'running') return undefined;
    if (!worker.cpu && this.cfg.quarantine.isQuarantined(worker.device, nowMs)) return undefined;
    const pinOk = (pin: string | undefined): boolean =>
      pin === undefined || pin === worker.device || this.cfg.quarantine.isQuarantined(pin, nowMs) || ![...this.devices.values()].some((w) => w.device === pin);
    const i = this.open.findIndex(
      (t) => (t.rung.cpu === worker.cpu || worker.elastic === true) && !t.rung.excludeDevices.includes(worker.device) && pinOk(t.rung.pinDevice),
    );
    if (i < 0) return undefined;
    const t = this.open[i] as Task;
    this.open.splice(i, 1);
    const id = `e${this.epoch}-a${++this.seq}`;
    const a: Attempt = {
      id,
      range: t.range,
      given: t.range,
      part: partName(id),
      rung: t.rung,
      worker,
      startMs: nowMs,
      done: 0,
      tokens: 0,
      resharded: false,
      ...(t.speculativeOf === undefined ? {} : { speculativeOf: t.speculativeOf }),
    };
    this.attempts.set(id, a);
    if (t.rung.cpu) this.note(`${id} ${fmt(t.range)}: rung 3: CPU fallback on ${worker.id} (${worker.device})`, true);
    return {
      attemptId: id,
      range: t.range,
      part: a.part,
      concurrencyFactor: t.rung.concurrencyFactor,
      reducedClock: t.rung.reducedClock,
      cpu: t.rung.cpu,
      ...(t.speculativeOf === undefined ? {} : { speculativeOf: t.speculativeOf }),
    };
  }

  /** A worker's report: `done` records of the attempt finished (in order), `tokens` processed. */
  progress(attemptId: string, done: number, tokens: number): boolean {
    const a = this.attempts.get(attemptId);
    if (a === undefined) return false;
    a.done = Math.max(a.done, done);
    a.tokens = Math.max(a.tokens, tokens);
    return true;
  }

  /**
   * After a coordinator restart a worker still running an attempt of an earlier epoch reports it: the attempt is
   * taken over (its records leave the open tasks) unless every record of it is committed already.
   */
  adopt(attemptId: string, range: Range, worker: WorkerInfo, startMs: number, done: number): 'adopted' | 'cancel' {
    this.devices.set(worker.id, worker);
    if (this.attempts.has(attemptId)) return 'adopted';
    if (subtract(range, this.committed).length === 0 || this.state !== 'running') return 'cancel';
    // The rung the manifest kept for these records (the highest where several overlap): a CPU-rung attempt stays one.
    const rung = this.open.filter((t) => overlaps(t.range, range)).reduce<Rung>((best, t) => (t.rung.level > best.level ? t.rung : best), FRESH);
    this.attempts.set(attemptId, { id: attemptId, range, given: range, part: partName(attemptId), rung, worker, startMs, done, tokens: 0, resharded: false });
    this.open = this.open.flatMap((t) => subtract(t.range, [range]).map((r) => ({ ...t, range: r })));
    this.reconcile();
    return 'adopted';
  }

  /** The attempt wrote its part: check it and commit the records of it not yet committed. */
  complete(attemptId: string, nowMs: number): CommitResult {
    const a = this.attempts.get(attemptId);
    const file = partName(attemptId);
    if (a === undefined) {
      this.store.remove(file);
      return { kind: 'discarded', why: `attempt ${attemptId} is not running (cancelled, lost or from before a restart)`, cancel: [] };
    }
    const text = this.store.read(file);
    const lines = text === undefined ? [] : text.split('\n').filter((l) => l !== '');
    const bad = text === undefined ? `${file} is missing` : this.checkPart(lines, a);
    if (bad !== undefined) {
      this.fail(attemptId, { kind: 'corrupt-output', message: bad, device: a.worker.device }, nowMs);
      return { kind: 'failed', why: bad };
    }
    const partRange = { start: a.given.start, end: a.given.start + lines.length };
    const accepted = subtract(partRange, this.committed);
    this.attempts.delete(attemptId);
    if (accepted.length === 0) {
      this.store.remove(file);
      this.reconcile();
      return { kind: 'discarded', why: `every record of ${fmt(partRange)} was committed by another attempt`, cancel: this.cancelCovered() };
    }
    let failed = 0;
    let tokens = 0;
    for (const r of accepted)
      for (let i = r.start; i < r.end; i++) {
        const v = JSON.parse(lines[i - partRange.start] as string) as { error?: unknown; response?: { body?: { usage?: { total_tokens?: number } } } | null };
        if (v.error !== null && v.error !== undefined) failed++;
        tokens += v.response?.body?.usage?.total_tokens ?? 0;
      }
    const entry: PartEntry = { file, start: partRange.start, lines: lines.length, accept: accepted, failed, tokens };
    try {
      this.writeManifest([...this.parts, entry], 'running');
    } catch (e) {
      if (!(e instanceof OutputWriteError)) throw e;
      // Not committed: the records go back to the open tasks, and the job reports the volume.
      this.outputError = e.message;
      this.store.remove(file);
      this.note(`commit of ${attemptId} failed: ${e.message}`);
      this.reconcile();
      return { kind: 'failed', why: e.message };
    }
    this.parts.push(entry);
    this.committed = union(this.committed, accepted);
    const n = total(accepted);
    if (a.speculativeOf === undefined && !a.resharded && lines.length > 0) this.finishedMsPerRecord.push((nowMs - a.startMs) / lines.length);
    const cancel = this.cancelCovered();
    this.reconcile();
    return { kind: 'committed', accepted, discardedRecords: lines.length - n, cancel };
  }

  /**
   * A running attempt commits the finished prefix of its records without stopping: `file` (a part file of its own,
   * e.g. `parts/<attemptId>.c1.jsonl`, written atomically) holds lines from the attempt's first record, like its
   * final part. The records of it not yet committed are accepted and the attempt keeps running; when it completes,
   * its final part's lines for them are discarded (accepted once, as for any race). A lost worker then loses only
   * what came after its last checkpoint. A bad or unknown checkpoint commits nothing and fails nothing.
   */
  checkpoint(attemptId: string, file: string): CommitResult {
    // Already committed (a report seen again, e.g. by a restarted controller): the file is output, keep it.
    if (this.parts.some((p) => p.file === file)) return { kind: 'discarded', why: `${file} is committed already`, cancel: [] };
    const a = this.attempts.get(attemptId);
    if (a === undefined || file === a.part || !file.startsWith('parts/')) {
      this.store.remove(file);
      return { kind: 'discarded', why: `no checkpoint for ${attemptId} in ${file} (not running, or not a checkpoint file)`, cancel: [] };
    }
    const text = this.store.read(file);
    const lines = text === undefined ? [] : text.split('\n').filter((l) => l !== '');
    const bad = text === undefined ? `${file} is missing` : this.checkPart(lines, a);
    const accepted = bad === undefined ? subtract({ start: a.given.start, end: a.given.start + lines.length }, this.committed) : [];
    if (bad !== undefined || accepted.length === 0) {
      this.store.remove(file);
      return { kind: 'discarded', why: bad ?? `nothing new in ${file}`, cancel: [] };
    }
    const entry: PartEntry = { file, start: a.given.start, lines: lines.length, accept: accepted, failed: 0, tokens: 0 };
    let failed = 0;
    let tokens = 0;
    for (const r of accepted)
      for (let i = r.start; i < r.end; i++) {
        const v = JSON.parse(lines[i - a.given.start] as string) as { error?: unknown; response?: { body?: { usage?: { total_tokens?: number } } } | null };
        if (v.error !== null && v.error !== undefined) failed++;
        tokens += v.response?.body?.usage?.total_tokens ?? 0;
      }
    const withCounts = { ...entry, failed, tokens };
    try {
      this.writeManifest([...this.parts, withCounts], 'running');
    } catch (e) {
      if (!(e instanceof OutputWriteError)) throw e;
      this.outputError = e.message;
      this.store.remove(file);
      this.note(`checkpoint of ${attemptId} failed: ${e.message}`);
      return { kind: 'failed', why: e.message };
    }
    this.parts.push(withCounts);
    this.committed = union(this.committed, accepted);
    const cancel = this.cancelCovered();
    this.reconcile();
    return { kind: 'committed', accepted, discardedRecords: lines.length - total(accepted), cancel };
  }

  private checkPart(lines: readonly string[], a: Attempt): string | undefined {
    if (lines.length > size(a.given)) return `${a.part}: ${lines.length} lines for ${size(a.given)} records ${fmt(a.given)}`;
    for (let i = 0; i < lines.length; i++) {
      const want = this.cfg.records[a.given.start + i]?.customId;
      let got: unknown;
      try {
        got = (JSON.parse(lines[i] as string) as { custom_id?: unknown }).custom_id;
      } catch {
        return `${a.part}:${i + 1}: not JSON`;
      }
      if (got !== want) return `${a.part}:${i + 1}: custom_id ${JSON.stringify(got)}, expected ${JSON.stringify(want)} (record ${a.given.start + i})`;
    }
    return undefined;
  }

  /** Running attempts whose records are all committed: the losing copies. */
  private cancelCovered(): string[] {
    const out: string[] = [];
    for (const a of this.attempts.values()) if (covers(this.committed, a.range)) out.push(a.id);
    for (const id of out) this.attempts.delete(id);
    for (const id of out) this.note(`cancelled ${id}: its records were committed by another attempt`);
    return out;
  }

  /** The attempt failed: walk the fault ladder for its uncommitted records. */
  fail(attemptId: string, failure: { kind: FailureKind; message: string; device: string }, nowMs: number): void {
    const a = this.attempts.get(attemptId);
    if (a === undefined) return;
    this.attempts.delete(attemptId);
    this.store.remove(a.part);
    const front: Task[] = [];
    for (const r of subtract(a.range, this.committed)) {
      const d = nextRung(r, a.rung, failure, this.cfg.ladder, {
        nowMs,
        deviceAllowsReducedClock: a.worker.allowsReducedClock ?? false,
        otherDevices: this.liveGpuDevices(nowMs, failure.device),
      });
      if (d.quarantine !== undefined) {
        this.cfg.quarantine.quarantine(d.quarantine.device, d.quarantine.reason, d.quarantine.untilMs);
        this.note(`quarantined ${d.quarantine.device} until ${new Date(d.quarantine.untilMs).toISOString()}`, true);
      }
      if (d.kind === 'retry') {
        for (const p of d.pieces) front.push({ range: p.range, rung: p.rung });
        const p0 = d.pieces[0]?.rung;
        const how =
          p0 === undefined
            ? ''
            : p0.level === 1
              ? `same device at ${p0.concurrencyFactor}× concurrency${p0.reducedClock ? ', reduced clock' : ''}`
              : p0.level === 2
                ? 'split over other devices'
                : 'CPU fallback, waiting for a CPU worker';
        this.note(
          `${attemptId} ${fmt(r)} on ${failure.device}: ${failure.kind} (${failure.message.slice(0, 160)}); rung ${p0?.level ?? '?'}: ${how} (${d.pieces.length} piece${d.pieces.length === 1 ? '' : 's'})`,
          true,
        );
      } else {
        this.commitErrors(r, d.reason);
      }
    }
    this.open.unshift(...front);
    this.reconcile();
    // The new rungs reach the manifest now, not at the next commit: a restart in between must not forget them.
    if (this.state === 'running' && front.length > 0) {
      try {
        this.writeManifest(this.parts, 'running');
      } catch (e) {
        if (!(e instanceof OutputWriteError)) throw e;
        this.outputError = e.message;
        this.note(`fault ladder not saved: ${e.message}`);
      }
    }
  }

  /** Records the ladder gave up on get error lines, committed like any part: the output stays complete. */
  private commitErrors(r: Range, reason: string): void {
    const file = partName(`e${this.epoch}-f${++this.seq}`);
    const lines: string[] = [];
    for (let i = r.start; i < r.end; i++)
      lines.push(JSON.stringify(errorLine(this.cfg.jobUid, (this.cfg.records[i] as RecordInfo).customId, 'shard_failed', reason)));
    const accepted = subtract(r, this.committed);
    const entry: PartEntry = { file, start: r.start, lines: lines.length, accept: accepted, failed: total(accepted), tokens: 0 };
    try {
      this.store.writeAtomic(file, `${lines.join('\n')}\n`);
      this.writeManifest([...this.parts, entry], 'running');
    } catch (e) {
      if (!(e instanceof OutputWriteError)) throw e;
      // Not committed: the records stay open (reconcile) and the job reports the volume.
      this.outputError = e.message;
      this.store.remove(file);
      this.note(`error lines for ${fmt(r)} not written: ${e.message}`);
      return;
    }
    this.parts.push(entry);
    this.committed = union(this.committed, accepted);
    this.note(`records ${fmt(r)} failed: ${reason}`, true);
    this.cancelCovered();
  }

  /** A worker is gone (crash, preemption, node loss): its attempts' records go back, at the rung they were. */
  lost(workerId: string): string[] {
    const gone = [...this.attempts.values()].filter((a) => a.worker.id === workerId);
    const front: Task[] = [];
    for (const a of gone) {
      this.attempts.delete(a.id);
      this.store.remove(a.part);
      const { pinDevice: _pin, ...rung } = a.rung;
      for (const range of subtract(a.range, this.committed))
        front.push({ range, rung, ...(a.speculativeOf === undefined ? {} : { speculativeOf: a.speculativeOf }) });
    }
    this.devices.delete(workerId);
    this.open.unshift(...front);
    this.reconcile();
    if (gone.length > 0) this.note(`worker ${workerId} lost with ${gone.map((a) => a.id).join(', ')}`);
    return gone.map((a) => a.id);
  }

  /**
   * The long-tail breaker: re-shards attempts predicted to finish late. Returns the cut each straggler is asked to
   * stop at; the rest of its records are open tasks at the front of the queue.
   */
  tick(nowMs: number, idleWorkers: number): { attemptId: string; cut: number; why: string }[] {
    if (this.state !== 'running') return [];
    // A re-sharded attempt or a chunk is not judged a straggler again, but the tail steal may split it further.
    const candidates = [...this.attempts.values()].filter(
      (a) => !a.rung.cpu && (this.cfg.longTail.idleSteal === true || (!a.resharded && a.speculativeOf === undefined)),
    );
    const typical = this.finishedMsPerRecord.length === 0 ? undefined : median(this.finishedMsPerRecord);
    const plans = planReshards(
      candidates.map((a) => ({
        id: a.id,
        range: a.range,
        startMs: a.startMs,
        done: a.done,
        ...(a.resharded || a.speculativeOf !== undefined ? { stealOnly: true } : {}),
      })),
      nowMs,
      typical,
      idleWorkers,
      this.cfg.longTail,
      this.open.length,
    );
    const out: { attemptId: string; cut: number; why: string }[] = [];
    for (const p of plans) {
      const a = this.attempts.get(p.attemptId) as Attempt;
      a.resharded = true;
      a.range = { start: a.range.start, end: p.cut };
      this.open.unshift(...p.chunks.map((range) => ({ range, rung: FRESH, speculativeOf: a.id })));
      this.note(`re-sharded ${a.id} at ${p.cut} into ${p.chunks.length}: ${p.why}`);
      out.push({ attemptId: a.id, cut: p.cut, why: p.why });
    }
    return out;
  }

  /** Progress for status. */
  status(nowMs: number): Progress {
    const processed = total(this.committed);
    const failed = this.parts.reduce((a, p) => a + p.failed, 0);
    const tokens = this.parts.reduce((a, p) => a + p.tokens, 0);
    const inflight = [...this.attempts.values()];
    const elapsedSec = (nowMs - this.openedAtMs) / 1000;
    const doneHere = processed - this.recordsAtOpen + inflight.reduce((s, a) => s + Math.min(a.done, size(a.range)), 0);
    const tokensHere = tokens - this.tokensAtOpen + inflight.reduce((s, a) => s + a.tokens, 0);
    const rate = elapsedSec > 0 ? doneHere / elapsedSec : 0;
    const remaining = this.cfg.records.length - processed;
    return {
      recordsTotal: this.cfg.records.length,
      recordsProcessed: processed,
      recordsFailed: failed,
      tokensProcessed: tokens,
      shardsTotal: this.parts.length + this.attempts.size + this.open.length,
      shardsCompleted: this.parts.length,
      percent: Math.floor((100 * processed) / Math.max(1, this.cfg.records.length)),
      tokensPerSecond: elapsedSec > 0 ? tokensHere / elapsedSec : 0,
      ...(rate > 0 ? { expectedFinishMs: nowMs + (1000 * Math.max(0, remaining - (doneHere - (processed - this.recordsAtOpen)))) / rate } : {}),
      running: this.attempts.size,
    };
  }

  /**
   * Writes output.jsonl: every record in input order when all are committed (state complete), else, when
   * `stopReason` is given, the committed ones with the manifest saying partial and naming the missing ranges.
   */
  finish(stopReason?: string): { state: OutputState; records: number; missing: readonly Range[] } {
    const missing = this.uncommitted();
    if (missing.length > 0 && stopReason === undefined) throw new Error(`not done: ${total(missing)} records uncommitted`);
    const byStart = new Map<string, string[]>();
    const pieces: { r: Range; p: PartEntry }[] = [];
    for (const p of this.parts) for (const r of p.accept) pieces.push({ r, p });
    pieces.sort((x, y) => x.r.start - y.r.start);
    const out: string[] = [];
    for (const { r, p } of pieces) {
      let lines = byStart.get(p.file);
      if (lines === undefined) {
        const text = this.store.read(p.file);
        if (text === undefined) throw new ManifestError(`${p.file}: listed in ${MANIFEST} but missing from the output volume`);
        lines = text.split('\n').filter((l) => l !== '');
        byStart.set(p.file, lines);
      }
      for (let i = r.start; i < r.end; i++) out.push(lines[i - p.start] as string);
    }
    this.store.writeAtomic(OUTPUT, out.length === 0 ? '' : `${out.join('\n')}\n`);
    const state: OutputState = missing.length === 0 ? 'complete' : 'partial';
    this.writeManifest(this.parts, state, state === 'partial' ? { missing, reason: stopReason as string } : {});
    this.state = state;
    this.attempts.clear();
    this.open = [];
    return { state, records: out.length, missing };
  }

  /** Attempts overlapping `r` (for tests and explain). */
  attemptsOver(r: Range): string[] {
    return [...this.attempts.values()].filter((a) => overlaps(a.range, r)).map((a) => a.id);
  }
}
