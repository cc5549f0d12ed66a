/** The queue scenario's expectations (queue-scenario.ts) read against the trace of its run (queue-scenario-sim.ts). */
import { type Waiting } from '../core/actions/queue-cycle.ts';
import type { ClusterState } from '../core/snapshot/cluster-state.ts';
import type { QueueExpect, Target } from './queue-scenario-schema.ts';
import type { Trace } from './queue-scenario-sim.ts';

export function checkExpectation(e: QueueExpect, target: Target, t: Trace, state: ClusterState): string | undefined {
  const heldText = (id: string): string => {
    const w = t.waiting.get(id);
    return w === undefined ? (t.started.has(id) ? 'it ran and finished' : 'never considered') : `held (${w.reason}): ${w.message}`;
  };
  const sec = (ms: number): number => Math.round(ms) / 1000;
  // Preemptions, checkpoint requests and moves: each has a `by` and a time the expectation may name.
  const matching = <X extends { by: string; atMs: number }>(xs: readonly X[]): X | undefined =>
    xs.find((x) => (e.by === undefined || x.by === e.by) && (e.atSec === undefined || sec(x.atMs) === e.atSec));
  const gotExpected = (xs: readonly { by: string; atMs: number }[], prep: string): string =>
    `${xs.map((x) => `${x.by} at ${sec(x.atMs)} s`).join(', ')}, expected${e.by === undefined ? '' : ` ${prep} ${e.by}`}${e.atSec === undefined ? '' : ` at ${e.atSec} s`}`;
  switch (target) {
    case 'admitted': {
      const id = e.admitted as string;
      const s = t.started.get(id);
      if (s === undefined) return `expected ${id} to be admitted; ${heldText(id)}`;
      if (e.atSec !== undefined && sec(s.atMs) !== e.atSec) return `${id} admitted at ${sec(s.atMs)} s, expected at ${e.atSec} s`;
      const nodes = [...new Set(s.placements.map((p) => p.node))].sort();
      if (e.nodes !== undefined && JSON.stringify(nodes) !== JSON.stringify([...e.nodes].sort()))
        return `${id} on nodes ${nodes.join(',')}, expected ${[...e.nodes].sort().join(',')}`;
      if (e.nodeCount !== undefined && nodes.length !== e.nodeCount) return `${id} on ${nodes.length} nodes (${nodes.join(',')}), expected ${e.nodeCount}`;
      if (e.sameRack === true && new Set(nodes.map((n) => state.node(n)?.spec.location.rack)).size !== 1) return `${id} spans racks`;
      return undefined;
    }
    case 'held': {
      const id = e.held as string;
      const s = t.started.get(id);
      let w: Waiting | undefined;
      if (e.atSec !== undefined) {
        w = t.waitingAt.get(id)?.get(e.atSec * 1000);
        if (w === undefined)
          return `expected ${id} to be held at ${e.atSec} s; ${s !== undefined && s.atMs <= e.atSec * 1000 ? `it was admitted at ${sec(s.atMs)} s` : 'no cycle held it then'}`;
      } else {
        if (t.running.has(id)) return `expected ${id} to be held, but it was admitted at ${sec(s?.atMs ?? 0)} s`;
        w = t.waiting.get(id);
        if (w === undefined)
          return `expected ${id} to be held with a reason; ${s === undefined ? 'it was never considered' : `it was admitted at ${sec(s.atMs)} s and finished`}`;
      }
      if (e.reason !== undefined && w.reason !== e.reason) return `${id} held for ${w.reason} (${w.message}), expected ${e.reason}`;
      if (e.message !== undefined && w.message !== e.message) return `${id}: message\n    "${w.message}"\n  expected\n    "${e.message}"`;
      for (const c of e.messageContains ?? []) if (!w.message.includes(c)) return `${id}: message "${w.message}" does not contain "${c}"`;
      return undefined;
    }
    case 'preempted': {
      const id = e.preempted as string;
      const ps = t.preempted.filter((p) => p.victim === id);
      if (ps.length === 0) return `expected ${id} to be preempted; it was not (victims: ${t.preempted.map((p) => p.victim).join(', ') || 'none'})`;
      const p = matching(ps);
      if (p === undefined) return `${id} preempted by ${gotExpected(ps, 'by')}`;
      for (const c of e.messageContains ?? []) if (!p.reason.includes(c)) return `${id}: preemption reason "${p.reason}" does not contain "${c}"`;
      return undefined;
    }
    case 'running': {
      const id = e.running as string;
      if (t.running.has(id)) return undefined;
      const p = t.preempted.find((x) => x.victim === id);
      return p !== undefined
        ? `expected ${id} to be running; it was preempted at ${sec(p.atMs)} s by ${p.by}`
        : `expected ${id} to be running; ${t.started.has(id) ? 'it finished' : heldText(id)}`;
    }
    case 'deferred': {
      const id = e.deferred as string;
      const d = t.deferred.get(id);
      if (d === undefined) return `expected the preemption of ${id} to be deferred; it was not`;
      if (e.by !== undefined && d.by !== e.by) return `preemption of ${id} deferred for ${d.by}, expected for ${e.by}`;
      if (e.untilSec !== undefined && sec(d.untilMs) !== e.untilSec) return `preemption of ${id} deferred until ${sec(d.untilMs)} s, expected ${e.untilSec} s`;
      return undefined;
    }
    case 'checkpointRequested': {
      const id = e.checkpointRequested as string;
      const qs = t.checkpointRequests.filter((x) => x.victim === id);
      if (qs.length === 0)
        return `expected a checkpoint to be asked of ${id}; none was (asked of: ${t.checkpointRequests.map((x) => x.victim).join(', ') || 'none'})`;
      if (matching(qs) !== undefined) return undefined;
      return `checkpoint asked of ${id} for ${gotExpected(qs, 'for')}`;
    }
    case 'migrated': {
      const id = e.migrated as string;
      const ms = t.migrations.filter((x) => x.moved === id);
      if (ms.length === 0) return `expected ${id} to be moved; it was not (moved: ${t.migrations.map((x) => x.moved).join(', ') || 'none'})`;
      const m = matching(ms);
      if (m === undefined) return `${id} moved for ${gotExpected(ms, 'for')}`;
      if (e.nodes !== undefined && JSON.stringify(m.nodes) !== JSON.stringify([...e.nodes].sort()))
        return `${id} moved to ${m.nodes.join(',')}, expected ${[...e.nodes].sort().join(',')}`;
      return undefined;
    }
    case 'reservation': {
      const id = e.reservation as string;
      const all = [...(t.reservations.get(id) ?? [])];
      // At the cycle asked for, else the latest.
      const atSec = e.atSec;
      const found = atSec === undefined ? all[all.length - 1] : all.find(([atMs]) => atMs === atSec * 1000);
      if (found === undefined)
        return `expected a reservation for ${id}${e.atSec === undefined ? '' : ` at ${e.atSec} s`}; ${all.length > 0 ? `it had one at ${all.map(([atMs]) => sec(atMs)).join(', ')} s` : t.started.has(id) ? 'it was admitted' : heldText(id)}`;
      const [atMs, r] = found;
      const msg = t.waitingAt.get(id)?.get(atMs)?.message ?? '';
      if (e.startsAtSec !== undefined && sec(r.startMs) !== e.startsAtSec)
        return `reservation of ${id} starts at ${sec(r.startMs)} s, expected ${e.startsAtSec} s`;
      if (e.nodes !== undefined && JSON.stringify(r.nodes) !== JSON.stringify([...e.nodes].sort()))
        return `reservation of ${id} on ${r.nodes.join(',')}, expected ${[...e.nodes].sort().join(',')}`;
      if (e.nodeCount !== undefined && r.nodes.length !== e.nodeCount) return `reservation of ${id} on ${r.nodes.length} nodes, expected ${e.nodeCount}`;
      for (const c of e.messageContains ?? []) if (!msg.includes(c)) return `${id}: message "${msg}" does not contain "${c}"`;
      return undefined;
    }
    case 'preemptions':
      return t.preempted.length === e.preemptions
        ? undefined
        : `${t.preempted.length} preemptions (${t.preempted.map((p) => p.victim).join(', ')}), expected ${e.preemptions}`;
    case 'maxPreemptions':
      return t.preempted.length <= (e.maxPreemptions as number) ? undefined : `${t.preempted.length} preemptions, expected at most ${e.maxPreemptions}`;
    case 'shares': {
      const want = e.shares as Record<string, number>;
      const qs = Object.keys(want);
      // Over the cycles in which every queue named had jobs waiting (they contended).
      const gpu = new Map<string, number>();
      let contendedMs = 0;
      for (const [key, times] of t.gpuTime) {
        const waitingQueues = key.split(',');
        if (!qs.every((q) => waitingQueues.includes(q))) continue;
        contendedMs += times.get('') ?? 0;
        for (const q of qs) gpu.set(q, (gpu.get(q) ?? 0) + (times.get(q) ?? 0));
      }
      if (contendedMs === 0) return `queues ${qs.join(', ')} never had jobs waiting at the same time: no contention to measure shares over`;
      const wSum = qs.reduce((s, q) => s + (want[q] as number), 0);
      const gSum = qs.reduce((s, q) => s + (gpu.get(q) ?? 0), 0);
      const tol = (e.tolerancePct ?? 10) / 100;
      const got = qs.map((q) => ({ q, want: (want[q] as number) / wSum, got: gSum === 0 ? 0 : (gpu.get(q) ?? 0) / gSum }));
      const bad = got.filter((g) => Math.abs(g.got - g.want) > tol * g.want);
      const show = (x: number): string => `${Math.round(x * 1000) / 10}%`;
      return bad.length === 0
        ? undefined
        : `shares over ${contendedMs / 1000} s of contention: ${got.map((g) => `${g.q} ${show(g.got)} (entitled ${show(g.want)})`).join(', ')}; off by more than ${e.tolerancePct ?? 10}%: ${bad.map((g) => g.q).join(', ')}`;
    }
  }
}
