// The page's copy of the view model's patch rule (src/server/cluster-view.ts applyPatch) and the formatting
// of its numbers. Plain ESM: the page has no build step.

/** `view` with `patch` applied; throws when the patch does not follow this view (the page then reconnects). */
export function applyPatch(view, patch) {
  if (patch.fromSeq !== view.seq) throw new Error(`patch from seq ${patch.fromSeq} does not apply to seq ${view.seq}`);
  const nodes = view.nodes.slice();
  for (const { at, node } of patch.nodes) {
    if (nodes[at] === undefined || nodes[at].name !== node.name) throw new Error(`patch: node ${node.name} is not at ${at}`);
    nodes[at] = node;
  }
  return {
    ...view,
    seq: patch.seq,
    atMs: patch.atMs,
    ...(patch.replay === undefined ? {} : { replay: patch.replay }),
    totals: patch.totals,
    nodes,
    queues: patch.queues ?? view.queues,
    pending: applyListDelta(view.pending, patch.pending, comparePending),
    running: applyListDelta(view.running, patch.running, compareRunning),
  };
}

const byId = (a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
/** The running table's order: most GPUs first, then by id (as cluster-view.ts compareRunning). */
export const compareRunning = (a, b) => b.gpuMilli - a.gpuMilli || byId(a, b);
/** The pending table's order: priority, then the longest waiting, then id (as comparePending). */
export const comparePending = (a, b) => b.priority - a.priority || a.arrivalMs - b.arrivalMs || byId(a, b);

/** A keyed table with rows upserted and removed, re-sorted. */
export function applyListDelta(list, delta, order) {
  if (delta === undefined) return list;
  const drop = new Set([...delta.remove, ...delta.upsert.map((r) => r.id)]);
  return [...list.filter((r) => !drop.has(r.id)), ...delta.upsert].sort(order);
}

/** GPU milli as GPUs: 8000 → "8", 2500 → "2.5", null (unlimited) → "∞". */
export function gpus(milli) {
  if (milli === null || milli === undefined) return '∞';
  const g = milli / 1000;
  return Number.isInteger(g)
    ? String(g)
    : g
        .toFixed(g < 10 ? 2 : 1)
        .replace(/0+$/, '')
        .replace(/\.$/, '');
}

/** A duration in ms as "45 s", "12 min", "3 h 5 min", "2 d 4 h". */
export function duration(ms) {
  if (!Number.isFinite(ms)) return '—';
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 90) return `${s} s`;
  const m = Math.round(s / 60);
  if (m < 90) return `${m} min`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h} h ${m % 60} min`;
  return `${Math.floor(h / 24)} d ${h % 24} h`;
}

/** A time of the view: wall-clock time for a live cluster, virtual time since the start for the simulator. */
export function clock(view, ms) {
  if (view.source === 'sim') return `t+${duration(ms)}`;
  return new Date(ms).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });
}

/**
 * Where a GPU sits for NVLink, as the tooltip says it: "NVLink island N" when it shares NVLink with another GPU
 * of its node (or its node is in a multi-node NVLink domain), "PCIe only (no NVLink)" when it is alone in its
 * island — a PCIe-only node (L4, T4) gives every GPU an island of its own, and a number there would suggest a link.
 */
export function nvlinkLabel(node, gpu) {
  if (node.nvlinkDomain !== undefined) return `NVLink island ${gpu.island} (domain ${node.nvlinkDomain})`;
  let peers = 0;
  for (const g of node.gpus) if (g.island === gpu.island) peers++;
  return peers > 1 ? `NVLink island ${gpu.island}` : 'PCIe only (no NVLink)';
}

/**
 * The running table's "one NVLink domain" cell: yes / no only when some NVLink domain of the cluster (of the
 * job's GPU model) could hold the job; a job larger than every domain spans domains by necessity, which is no
 * fault (neutral text, not a red "no"). Returns [text, css class].
 */
export function domainCell(r) {
  if (r.oneNvlinkDomain) return ['yes', 'yes'];
  if (r.largestNvlinkDomainGpus !== undefined && r.gpus !== undefined && r.gpus > r.largestNvlinkDomainGpus)
    return [`spans domains (no domain holds ${r.gpus} GPUs)`, 'neutral'];
  return ['no', 'no'];
}
