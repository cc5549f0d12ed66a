/**
 * `sits top` on the terminal: the dashboard's cluster view (server/cluster-view.ts, the one view model) as a GPU
 * heatmap with one line per node group (zone/block/rack, a cell per GPU, NVLink islands apart), a queues table
 * and the pending jobs with their reason and expected start, the way `kubectl top` prints: plain columns, no
 * borders. The cell characters carry the allocation on their own (█ whole, ▒ shared, · free, x unhealthy);
 * colour (chalk, off without a TTY or with NO_COLOR) adds the fill level.
 */
import { Chalk, type ChalkInstance } from 'chalk';
import Table from 'cli-table3';
import type { ClusterView, GpuView, NodeView, PendingJobView, QueueView } from '../server/cluster-view.ts';

export type TopSection = 'all' | 'nodes' | 'queues' | 'pending' | 'jobs';

export interface TopRenderOptions {
  /** 0 = no colour, 1 = 16 colours, 2 = 256, 3 = truecolor (chalk's levels). */
  readonly colorLevel: 0 | 1 | 2 | 3;
  /** Terminal width; lines of cells wrap to it. */
  readonly width: number;
  readonly section: TopSection;
  /** One heatmap line per node instead of per node group (`-o wide`). */
  readonly wide?: boolean;
  /** The time `ETA` is counted from (the view's own `atMs` by default). */
  readonly nowMs?: number;
  /** At most this many pending and running rows (default 20; the totals count them all). */
  readonly maxRows?: number;
}

const CELL = { whole: '█', fraction: '▒', free: '·', unhealthy: 'x' } as const;
const ISLAND_GAP = '╎';

/** kubectl's borderless table: columns two spaces apart, headers in capitals. */
function columns(head: readonly string[], rows: readonly (readonly string[])[], align: readonly ('left' | 'right')[]): string {
  const t = new Table({
    head: [...head],
    chars: {
      top: '',
      'top-mid': '',
      'top-left': '',
      'top-right': '',
      bottom: '',
      'bottom-mid': '',
      'bottom-left': '',
      'bottom-right': '',
      left: '',
      'left-mid': '',
      mid: '',
      'mid-mid': '',
      right: '',
      'right-mid': '',
      middle: '  ',
    },
    style: { head: [], border: [], 'padding-left': 0, 'padding-right': 0, compact: true },
    colAligns: [...align],
  });
  for (const r of rows) t.push([...r]);
  return t
    .toString()
    .split('\n')
    .map((l) => l.trimEnd())
    .join('\n');
}

const gpus = (milli: number): string => {
  const g = milli / 1000;
  return Number.isInteger(g) ? String(g) : g.toFixed(1);
};
const gpusOrUnlimited = (m: number | null): string => (m === null ? '∞' : gpus(m));
const pct = (part: number, whole: number): string => (whole <= 0 ? '-' : `${Math.round((100 * part) / whole)}%`);

/**
 * The ETA column: in how long, `now`, or `overdue 12m` for an estimate more than a minute past while the job
 * still waits (estimates are refreshed once a minute; `sits explain` says what the estimate assumed).
 */
export function etaCell(etaMs: number | undefined, nowMs: number): string {
  if (etaMs === undefined) return '-';
  if (etaMs > nowMs) return shortDuration(etaMs - nowMs);
  return nowMs - etaMs > 60_000 ? `overdue ${shortDuration(nowMs - etaMs)}` : 'now';
}

/** `45s`, `12m`, `3h05m`, `2d4h`: kubectl's AGE style. */
export function shortDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h${String(m % 60).padStart(2, '0')}m`;
  return `${Math.floor(h / 24)}d${h % 24}h`;
}

function cell(g: GpuView, c: ChalkInstance): string {
  if (!g.healthy || g.status === 'unhealthy') return c.red(CELL.unhealthy);
  if (g.usedMilli >= 1000) return c.green(CELL.whole);
  if (g.usedMilli > 0) return g.usedMilli >= 500 ? c.yellow(CELL.fraction) : c.cyan(CELL.fraction);
  return c.gray(CELL.free);
}

/** Whether a gap goes before GPU `i`: a new NVLink island, on a node whose islands join several GPUs (a PCIe-only node, one GPU an island, shows none). */
function gapBefore(n: NodeView, i: number): boolean {
  if (i === 0 || (n.gpus[i - 1] as GpuView).island === (n.gpus[i] as GpuView).island) return false;
  return new Set(n.gpus.map((g) => g.island)).size < n.gpus.length;
}

/** A node's GPUs in device order, NVLink islands apart: `████╎██▒·`. */
export function nodeCells(n: NodeView, c: ChalkInstance): string {
  let out = '';
  for (let i = 0; i < n.gpus.length; i++) {
    if (gapBefore(n, i)) out += c.gray(ISLAND_GAP);
    out += cell(n.gpus[i] as GpuView, c);
  }
  return n.unschedulable ? c.strikethrough(out) : out;
}

const visibleWidth = (n: NodeView): number => n.gpus.length + n.gpus.reduce((k, _g, i) => k + (gapBefore(n, i) ? 1 : 0), 0);

const groupOf = (n: NodeView): string => `${n.zone}/${n.block}/${n.rack}${n.nvlinkDomain === undefined ? '' : `/${n.nvlinkDomain}`}`;

function used(ns: readonly NodeView[]): { total: number; healthy: number; milli: number } {
  let total = 0;
  let healthy = 0;
  let milli = 0;
  for (const n of ns)
    for (const g of n.gpus) {
      total++;
      if (g.healthy) healthy++;
      milli += g.usedMilli;
    }
  return { total, healthy, milli };
}

/** The heatmap: one line per node group (or per node with `wide`), cells wrapped to the terminal width. */
export function renderHeatmap(view: ClusterView, o: TopRenderOptions): string {
  const c = new Chalk({ level: o.colorLevel });
  const groups: { name: string; nodes: NodeView[] }[] = [];
  for (const n of view.nodes) {
    const name = o.wide === true ? n.name : groupOf(n);
    const last = groups[groups.length - 1];
    if (last?.name === name) last.nodes.push(n);
    else groups.push({ name, nodes: [n] });
  }
  const nameWidth = Math.max(o.wide === true ? 'NODE'.length : 'NODE GROUP'.length, ...groups.map((g) => g.name.length));
  const head = o.wide === true ? ['NODE', 'MODEL', 'GPUS', 'USED'] : ['NODE GROUP', 'NODES', 'GPUS', 'USED'];
  const fixed = [nameWidth, o.wide === true ? Math.max(5, ...groups.map((g) => g.nodes[0]?.model.length ?? 0)) : 5, 5, 4];
  const pad = (s: string, w: number, right: boolean): string => (right ? s.padStart(w) : s.padEnd(w));
  const prefix = (cols: readonly string[]): string => cols.map((s, i) => pad(s, fixed[i] as number, i > 0 && !(o.wide === true && i === 1))).join('  ');
  const indent = prefix(head).length + 2;
  const room = Math.max(10, o.width - indent);
  const lines = [`${prefix(head)}  GPU HEATMAP`];
  for (const g of groups) {
    const u = used(g.nodes);
    const second = o.wide === true ? (g.nodes[0]?.model ?? '') : String(g.nodes.length);
    const start = `${prefix([g.name, second, `${u.healthy === u.total ? u.total : `${u.healthy}/${u.total}`}`, pct(u.milli, u.healthy * 1000)])}  `;
    // Nodes are never split across lines: a node's cells stay together.
    let line = start;
    let width = 0;
    for (const n of g.nodes) {
      const w = visibleWidth(n);
      if (width > 0 && width + 1 + w > room) {
        lines.push(line.trimEnd());
        line = ' '.repeat(indent);
        width = 0;
      }
      line += (width > 0 ? ' ' : '') + nodeCells(n, c);
      width += (width > 0 ? 1 : 0) + w;
    }
    lines.push(line.trimEnd());
  }
  lines.push(c.gray(`${CELL.whole} whole GPU  ${CELL.fraction} shared  ${CELL.free} free  ${CELL.unhealthy} unhealthy  ${ISLAND_GAP} NVLink islands apart`));
  return lines.join('\n');
}

export function renderQueues(queues: readonly QueueView[]): string {
  if (queues.length === 0) return 'No queues.';
  return (
    columns(
      ['QUEUE', 'COHORT', 'WEIGHT', 'NOMINAL', 'USED', 'BORROWED', 'FAIR SHARE', 'PENDING', 'RUNNING'],
      queues.map((q) => [
        `${q.name}${q.defined ? '' : '*'}`,
        q.cohort ?? '-',
        String(q.weight),
        gpusOrUnlimited(q.nominalGpuMilli),
        gpus(q.usedGpuMilli),
        gpus(q.borrowedGpuMilli),
        gpus(q.fairShareGpuMilli),
        `${q.pendingJobs} (${gpus(q.pendingGpuMilli)})`,
        String(q.runningJobs),
      ]),
      ['left', 'left', 'right', 'right', 'right', 'right', 'right', 'right', 'right'],
    ) + (queues.some((q) => !q.defined) ? '\n* no Queue object: the default queue of a queue label (no quota)' : '')
  );
}

function fit(s: string, w: number): string {
  return s.length <= w ? s : `${s.slice(0, Math.max(1, w - 1))}…`;
}

export function renderPending(pending: readonly PendingJobView[], nowMs: number, width: number, max: number): string {
  if (pending.length === 0) return 'No pending jobs.';
  const rows = pending
    .slice(0, max)
    .map((p) => [
      p.id,
      p.queue,
      String(p.pods),
      gpus(p.gpuMilli),
      shortDuration(nowMs - p.arrivalMs),
      p.queueReason ?? '-',
      etaCell(p.etaMs, nowMs),
      p.explanation,
    ]);
  // The explanation takes what the other columns leave of the width.
  const widths = [0, 1, 2, 3, 4, 5, 6].map((i) =>
    Math.max(['JOB', 'QUEUE', 'PODS', 'GPUS', 'WAITING', 'REASON', 'ETA'][i]?.length ?? 0, ...rows.map((r) => (r[i] ?? '').length)),
  );
  const room = Math.max(20, width - widths.reduce((a, b) => a + b + 2, 0));
  const out = columns(
    ['JOB', 'QUEUE', 'PODS', 'GPUS', 'WAITING', 'REASON', 'ETA', 'EXPLANATION'],
    rows.map((r) => [...r.slice(0, 7), fit(r[7] ?? '', room)]),
    ['left', 'left', 'right', 'right', 'right', 'left', 'right', 'left'],
  );
  return pending.length > max ? `${out}\n… ${pending.length - max} more pending (-o json lists them)` : out;
}

export function renderRunning(view: ClusterView, nowMs: number, max: number): string {
  if (view.running.length === 0) return 'No running jobs.';
  const out = columns(
    ['JOB', 'QUEUE', 'PODS', 'GPUS', 'NODES', 'SPAN', 'AGE'],
    view.running
      .slice(0, max)
      .map((r) => [
        r.id,
        r.queue,
        String(r.pods),
        gpus(r.gpuMilli),
        String(r.nodes.length),
        r.span,
        r.startMs === undefined ? '-' : shortDuration(nowMs - r.startMs),
      ]),
    ['left', 'left', 'right', 'right', 'right', 'left', 'right'],
  );
  return view.running.length > max ? `${out}\n… ${view.running.length - max} more running` : out;
}

/** The whole screen (or one section of it). */
export function renderTop(view: ClusterView, o: TopRenderOptions): string {
  const nowMs = o.nowMs ?? view.atMs;
  const max = o.maxRows ?? 20;
  const t = view.totals;
  const parts: string[] = [];
  if (o.section === 'all') {
    parts.push(
      `${view.source === 'sim' ? 'simulated cluster' : 'cluster'}: ${t.nodes} nodes, ${t.gpus} GPUs (${t.healthyGpus} healthy), ${pct(t.usedGpuMilli, t.healthyGpus * 1000)} allocated, ${t.runningJobs} running, ${t.pendingJobs} pending`,
    );
  }
  if (o.section === 'all' || o.section === 'nodes') parts.push(renderHeatmap(view, o));
  if (o.section === 'all' || o.section === 'queues') parts.push(renderQueues(view.queues));
  if (o.section === 'all' || o.section === 'pending') parts.push(renderPending(view.pending, nowMs, o.width, max));
  if (o.section === 'jobs') parts.push(renderRunning(view, nowMs, max));
  return `${parts.join('\n\n')}\n`;
}
