/**
 * Golden digests of the queue cycle's decisions (issue 35): every result runCycle returns while (a) the declarative
 * scenario suite, (b) a prefix of the FGD default trace replayed on the simulator and (c) a small seeded tenants
 * run go through it is hashed — placements, preemptions, deferrals, checkpoint requests, waits with their reasons
 * and messages, reservations, attempts — one sha256 per part. A refactor of the cycle must leave them unchanged.
 * Here in bench because bench tests may import app (the scenario runner) and bench (replay, tenants); core may not.
 * The digests were computed on the cycle before its split into session and actions, and computed again when a
 * decision was meant to change: ADR 0199 (a head reserves only after 4 h; the scenarios reserved 431 times, now 5,
 * everything else the same; the tenants run 47 and 10 checkpoint requests, now 41 and 6).
 */
import { createHash, type Hash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import type * as QueueCycle from '../core/actions/queue-cycle.ts';
import type { CycleResult } from '../core/actions/queue-cycle.ts';
import { checkScenario, loadScenarioText } from '../app/scenario.ts';
import { DEFAULT_FGD_TRACES, FGD_TUNE, tuneUnits } from './checkpoint/migration.ts';
import { replay } from './replay/replay.ts';
import { compressTime, loadClusterSource, loadUnits } from './replay/sources.ts';
import { busiestWindow, parsePhilly } from './tenants/philly-window.ts';
import { DEFAULT_TENANTS_TRACE } from './tenants/bench-tenants.ts';
import { runTenantSim } from './tenants/tenant-sim.ts';

/** The hash of the part running and how many decisions of each kind it saw (so a part that stops exercising one shows). */
const recorder = vi.hoisted(() => ({ hash: undefined as Hash | undefined, seen: {} as Record<string, number> }));

// Every caller reaches the cycle through this module (the spine imports it): wrap runCycle to record its results.
vi.mock('../core/actions/queue-cycle.ts', async (importOriginal) => {
  const original = await importOriginal<typeof QueueCycle>();
  return {
    ...original,
    runCycle: (input: Parameters<typeof original.runCycle>[0]): CycleResult => {
      const res = original.runCycle(input);
      if (recorder.hash !== undefined) {
        const seen = recorder.seen;
        seen['cycles'] = (seen['cycles'] ?? 0) + 1;
        for (const k of ['started', 'preempted', 'deferred', 'checkpointRequests', 'reservations'] as const) seen[k] = (seen[k] ?? 0) + res[k].length;
        seen['waiting'] = (seen['waiting'] ?? 0) + res.waiting.size;
        recorder.hash.update(`${decisions(input.nowMs, res)}\n`);
      }
      return res;
    },
  };
});

/** The decisions of one cycle as one line of JSON (Map order kept: it is the order the cycle decided in). */
function decisions(nowMs: number, r: CycleResult): string {
  return JSON.stringify({
    nowMs,
    started: r.started.map((s) => [s.job.id, s.placements.map((p) => [p.podId, p.node, p.gpus])]),
    preempted: r.preempted.map((p) => [p.victim.id, p.by, p.reason]),
    deferred: r.deferred.map((d) => [d.victim.id, d.by, d.atMs]),
    checkpointRequests: r.checkpointRequests.map((c) => [c.victim.id, c.by, c.deadlineMs]),
    waiting: [...r.waiting].map(([id, w]) => [id, w.reason, w.message, w.retryAtMs ?? null]),
    reservations: r.reservations.map((x) => [x.jobId, x.startMs, x.nodes, x.needs]),
    attempted: r.attempted,
  });
}

/** Runs `part` with every cycle recorded; the digest and the decisions it saw, by kind. */
function digestOf(part: () => void): { digest: string; seen: Record<string, number> } {
  recorder.hash = createHash('sha256');
  recorder.seen = {};
  try {
    part();
    return { digest: recorder.hash.digest('hex'), seen: recorder.seen };
  } finally {
    recorder.hash = undefined;
  }
}

const scenarioDir = join(import.meta.dirname, '../../scenarios');

function runScenarios(): void {
  for (const sub of ['', 'queues', 'kube']) {
    const files = readdirSync(join(scenarioDir, sub))
      .filter((f) => f.endsWith('.yaml'))
      .sort();
    for (const f of files) {
      const rel = sub === '' ? f : `${sub}/${f}`;
      recorder.hash?.update(`# ${rel}\n`);
      const s = loadScenarioText(`scenarios/${rel}`, readFileSync(join(scenarioDir, rel), 'utf8'));
      if (!s.ok) throw s.error;
      expect(checkScenario(s.value).failures).toEqual([]);
    }
  }
}

function runFgdPrefix(): void {
  const nodes = loadClusterSource({ kind: 'openb', file: join(DEFAULT_FGD_TRACES, 'openb_node_list_gpu_node.csv') });
  const capacity = nodes.reduce((s, n) => s + n.gpus.length, 0);
  // The FGD protocol's load (1.3 × capacity, clones seeded), so that pods wait: a prefix of the trace, two hours.
  const prefix = loadUnits(join(DEFAULT_FGD_TRACES, 'openb_pod_list_default.csv'), 'openb').units.slice(0, 2000);
  const units = compressTime(tuneUnits(prefix, capacity, FGD_TUNE, 42).units, 200_000);
  const origin = units.reduce((m, u) => Math.min(m, u.arrivalMs), Number.POSITIVE_INFINITY);
  const r = replay(nodes, units, { policy: 'sits', seed: 42, samples: 20, untilMs: origin + 2 * 3_600_000 });
  recorder.hash?.update(`# utilisation ${JSON.stringify(r.series)}\n`);
}

function runTenants(): void {
  const jobs = parsePhilly(readFileSync(DEFAULT_TENANTS_TRACE, 'utf8'), DEFAULT_TENANTS_TRACE);
  const w = busiestWindow(jobs, { windowSec: 3 * 3600, maxDurationSec: 2 * 3600, maxGpus: 3 * 8 });
  const common = { nodes: 3, shape: 'dgx-h100', windowMs: 3 * 3_600_000, checkpointEveryMs: 30 * 60_000, seed: 7 };
  for (const run of [
    { ...common, mode: 'sits' as const, etaSamples: 0 },
    { ...common, mode: 'sits' as const, etaSamples: 0, checkpoint: 'aware' as const },
    { ...common, mode: 'fifo' as const, etaSamples: 0 },
  ])
    recorder.hash?.update(`# ${JSON.stringify(runTenantSim(w.jobs.slice(0, 300), run).tiers)}\n`);
}

describe('the queue cycle decides byte for byte as before its split into session and actions (issue 35)', () => {
  it('the declarative scenarios', () => {
    expect(digestOf(runScenarios)).toEqual({
      digest: 'c945bb7843d18b008143204f8db3560f1978cf6aafb3376d4ec05b33168d837b',
      seen: { cycles: 360, started: 606, preempted: 23, deferred: 3, checkpointRequests: 2, reservations: 5, waiting: 20187 },
    });
  });
  it('a prefix of the FGD default trace on the simulator', () => {
    expect(digestOf(runFgdPrefix)).toEqual({
      digest: 'db796e9feb4f8ecfd49bd74d4d4077503c24b0c3d5f75a25e3e87bc77ab2c0e5',
      seen: { cycles: 4205, started: 10795, preempted: 0, deferred: 0, checkpointRequests: 0, reservations: 0, waiting: 1249075 },
    });
  });
  it('a small seeded tenants run (SITS, checkpoint-aware SITS, FIFO)', () => {
    expect(digestOf(runTenants)).toEqual({
      digest: '1cda724b1a4f7afa4facfdea23aca94c4ad5a5c535e5b757663afd0b1595a04e',
      seen: { cycles: 1719, started: 914, preempted: 14, deferred: 0, checkpointRequests: 6, reservations: 41, waiting: 195029 },
    });
  });
});
