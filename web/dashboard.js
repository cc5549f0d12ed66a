// The dashboard page: one EventSource on /dashboard/api/v1/cluster/stream (the whole view first, then patches), the
// heatmap on a canvas and three tables. Read-only: the page never writes anything. `window.sitsDashboard`
// exposes the current view and paint timings for tests and the benchmark.
import { Heatmap, COLOURS, queueColour } from './heatmap.js';
import { applyPatch, clock, domainCell, duration, gpus, nvlinkLabel } from './view.js';

const STREAM = 'api/v1/cluster/stream';
const MAX_ROWS = 200;
const HISTORY = 120;

const $ = (id) => document.getElementById(id);
const heatmap = new Heatmap($('heatmap'));
const tooltip = $('tooltip');
/** Usage and fair share per queue over the last updates (the sparkline). */
const history = new Map();
const state = {
  view: undefined,
  firstPaintMs: undefined,
  paints: [],
  errors: 0,
  connected: false,
  heatmap,
  /** The colour painted at the centre of a GPU's cell, as #rrggbb (read back from the canvas). */
  pixel(nodeName, gpu) {
    const i = state.view?.nodes.findIndex((n) => n.name === nodeName) ?? -1;
    const at = i < 0 ? undefined : heatmap.cellCentre(i, gpu);
    if (at === undefined) return undefined;
    const dpr = window.devicePixelRatio || 1;
    const d = heatmap.ctx.getImageData(Math.floor(at.x * dpr), Math.floor(at.y * dpr), 1, 1).data;
    return `#${[d[0], d[1], d[2]].map((v) => v.toString(16).padStart(2, '0')).join('')}`;
  },
};
window.sitsDashboard = state;

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text;
  if (cls !== undefined) e.className = cls;
  return e;
}

function row(cells) {
  const tr = document.createElement('tr');
  for (const c of cells) {
    if (c instanceof Node) {
      const td = document.createElement('td');
      td.append(c);
      tr.append(td);
    } else if (Array.isArray(c)) tr.append(el('td', c[0], c[1]));
    else tr.append(el('td', String(c)));
  }
  return tr;
}

function fillBody(table, rows, total, columns) {
  const body = table.tBodies[0];
  const frag = document.createDocumentFragment();
  for (const r of rows) frag.append(r);
  if (total > rows.length) {
    const tr = el('tr', undefined, 'more');
    const td = el('td', `… and ${total - rows.length} more`);
    td.colSpan = columns;
    tr.append(td);
    frag.append(tr);
  }
  body.replaceChildren(frag);
}

/**
 * Rows keyed by id, rebuilt only when their content changed and the body touched only when the rows or their
 * order did: a bind changes one row of thousands, and the page should lay out that much, not the whole table.
 */
function fillKeyed(table, items, total, columns, signature, build) {
  const cache = (table.rowCache ??= new Map());
  const next = new Map();
  const rows = [];
  for (const it of items) {
    const sig = signature(it);
    const old = cache.get(it.id);
    const tr = old !== undefined && old.sig === sig ? old.tr : build(it);
    next.set(it.id, { sig, tr });
    rows.push(tr);
  }
  table.rowCache = next;
  const body = table.tBodies[0];
  const more = total > rows.length ? `… and ${total - rows.length} more` : '';
  const same =
    body.children.length === rows.length + (more === '' ? 0 : 1) &&
    rows.every((r, i) => body.children[i] === r) &&
    (more === '' || body.lastElementChild?.textContent === more);
  if (!same) fillBody(table, rows, total, columns);
}

function legend() {
  const items =
    heatmap.mode === 'queue'
      ? [...new Set((state.view?.queues ?? []).map((q) => q.name))]
          .map((q) => [queueColour(q), q])
          .concat([
            [COLOURS.free, 'free'],
            [COLOURS.unhealthy, 'unhealthy'],
          ])
      : [
          [COLOURS.free, 'free'],
          [COLOURS.fractionLow, 'fraction (little)'],
          [COLOURS.fractionHigh, 'fraction (most)'],
          [COLOURS.whole, 'whole GPU'],
          [COLOURS.unhealthy, 'unhealthy'],
          [COLOURS.nvlinkBar, 'multi-node NVLink domain'],
        ];
  const ul = $('legend');
  ul.replaceChildren(
    ...items.map(([c, t]) => {
      const li = el('li');
      const sw = el('span', undefined, 'swatch');
      sw.style.background = c;
      li.append(sw, t);
      return li;
    }),
  );
}

/** A replay's state (sits demo --serve): running with its end, or ended with a restart button. */
function renderReplay(v) {
  const box = $('replay');
  const r = v.replay;
  if (r === undefined) {
    box.hidden = true;
    return;
  }
  box.hidden = false;
  const ended = r.state === 'ended';
  box.className = ended ? 'badge replay-ended' : 'badge';
  const text = $('replay-text');
  const run = r.run > 1 ? ` (run ${r.run})` : '';
  text.textContent = ended
    ? `replay ended at ${clock(v, v.atMs)}${run} — `
    : `replay${run} ${Math.min(100, Math.round((100 * v.atMs) / r.endMs))} % of ${clock(v, r.endMs)}${r.loop ? ', looping' : ''}`;
  const button = $('replay-restart');
  button.hidden = !ended;
  button.dataset.path = r.restartPath;
}

async function restartReplay() {
  const button = $('replay-restart');
  button.disabled = true;
  try {
    const res = await fetch(button.dataset.path, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' });
    if (!res.ok) $('replay-text').textContent = `restart refused: ${res.status} ${(await res.text()).trim()} — `;
  } catch (e) {
    $('replay-text').textContent = `restart failed: ${String(e)} — `;
  } finally {
    button.disabled = false;
  }
}

function renderHeader(v) {
  $('source').textContent = v.source === 'sim' ? 'simulator' : 'live cluster';
  $('clock').textContent = clock(v, v.atMs);
  renderReplay(v);
  const t = v.totals;
  const items = [
    ['nodes', t.nodes],
    ['GPUs', `${t.healthyGpus}/${t.gpus} healthy`],
    ['allocated', `${gpus(t.usedGpuMilli)} (${t.healthyGpus === 0 ? 0 : Math.round((100 * t.usedGpuMilli) / (t.healthyGpus * 1000))} %)`],
    ['pending', t.pendingJobs],
    ['running', t.runningJobs],
  ];
  $('totals').replaceChildren(
    ...items.map(([k, val]) => {
      const d = el('div');
      d.append(el('dt', k), el('dd', String(val)));
      return d;
    }),
  );
}

function spark(name, q) {
  const c = el('canvas', undefined, 'spark');
  const w = 140;
  const h = 22;
  const dpr = window.devicePixelRatio || 1;
  c.width = w * dpr;
  c.height = h * dpr;
  c.style.width = `${w}px`;
  c.style.height = `${h}px`;
  const ctx = c.getContext('2d');
  ctx.scale(dpr, dpr);
  const hs = history.get(name) ?? [];
  const top = Math.max(1, ...hs.map((s) => Math.max(s.used, s.fair)), q.nominalGpuMilli ?? 0);
  const line = (key, colour) => {
    ctx.strokeStyle = colour;
    ctx.lineWidth = 1.5;
    ctx.beginPath();
    hs.forEach((s, i) => {
      const x = hs.length === 1 ? w : (i / (HISTORY - 1)) * w;
      const y = h - 2 - (s[key] / top) * (h - 4);
      if (i === 0) ctx.moveTo(x, y);
      else ctx.lineTo(x, y);
    });
    ctx.stroke();
  };
  line('fair', '#868e96');
  line('used', queueColour(name));
  c.title = `used ${gpus(q.usedGpuMilli)} GPUs, fair share ${gpus(q.fairShareGpuMilli)}`;
  return c;
}

function renderQueues(v) {
  for (const q of v.queues) {
    const hs = history.get(q.name) ?? [];
    hs.push({ used: q.usedGpuMilli, fair: q.fairShareGpuMilli });
    if (hs.length > HISTORY) hs.shift();
    history.set(q.name, hs);
  }
  const rows = v.queues.map((q) =>
    row([
      q.defined ? q.name : `${q.name} (no Queue object)`,
      q.cohort ?? '—',
      [String(q.weight), 'num'],
      [gpus(q.nominalGpuMilli), 'num'],
      [gpus(q.borrowedGpuMilli), 'num'],
      [gpus(q.usedGpuMilli), 'num'],
      [gpus(q.fairShareGpuMilli), 'num'],
      [`${q.pendingJobs} (${gpus(q.pendingGpuMilli)} GPUs)`, 'num'],
      [String(q.runningJobs), 'num'],
      spark(q.name, q),
    ]),
  );
  fillBody($('queues'), rows, rows.length, 10);
}

function renderPending(v) {
  const rows = v.pending.slice(0, MAX_ROWS).map((p) => {
    const tr = row([
      p.id,
      p.queue,
      [gpus(p.gpuMilli), 'num'],
      [String(p.priority), 'num'],
      [duration(v.atMs - p.arrivalMs), 'num'],
      p.queueReason ?? '—',
      [p.explanation, 'why'],
      p.etaMs === undefined ? 'not estimated' : `${clock(v, p.etaMs)} (in ${duration(p.etaMs - v.atMs)})`,
    ]);
    tr.dataset.job = p.id;
    return tr;
  });
  $('pending-count').textContent = `${v.totals.pendingJobs}`;
  fillBody($('pending'), rows, v.totals.pendingJobs, 8);
}

function renderRunning(v) {
  const yes = (b) => (b ? ['yes', 'yes'] : ['no', 'no']);
  const build = (r) => {
    const tr = row([
      r.id,
      r.queue,
      [gpus(r.gpuMilli), 'num'],
      [String(r.pods), 'num'],
      r.span,
      domainCell(r),
      yes(r.oneRack),
      r.nodes.length <= 4 ? r.nodes.join(', ') : `${r.nodes.slice(0, 4).join(', ')} +${r.nodes.length - 4}`,
    ]);
    tr.dataset.job = r.id;
    return tr;
  };
  $('running-count').textContent = `${v.totals.runningJobs}`;
  fillKeyed(
    $('running'),
    v.running.slice(0, MAX_ROWS),
    v.running.length,
    8,
    (r) => `${r.queue}|${r.gpuMilli}|${r.pods}|${r.span}|${r.largestNvlinkDomainGpus}|${r.nodes.join(',')}`,
    build,
  );
}

function renderTables(v, changed) {
  renderHeader(v);
  if (changed.queues) renderQueues(v);
  if (changed.pending) renderPending(v);
  if (changed.running) renderRunning(v);
}

/** Resolves once the frame that shows what was just drawn has been produced (a task after its animation frame). */
const nextFrame = () =>
  new Promise((r) =>
    requestAnimationFrame(() => {
      const ch = new MessageChannel();
      ch.port1.onmessage = () => r();
      ch.port2.postMessage(0);
    }),
  );

function onView(text, receivedAt) {
  const v = JSON.parse(text);
  state.view = v;
  heatmap.setView(v);
  renderTables(v, { queues: true, pending: true, running: true });
  legend();
  void nextFrame().then(() => {
    const ms = performance.now();
    if (state.firstPaintMs === undefined) {
      state.firstPaintMs = ms;
      performance.mark('sits-first-paint');
    }
    state.paints.push({ kind: 'view', seq: v.seq, ms: ms - receivedAt, wallMs: Date.now() });
  });
}

function onPatch(text, receivedAt) {
  if (state.view === undefined) return;
  const p = JSON.parse(text);
  const parsed = performance.now();
  let v;
  try {
    v = applyPatch(state.view, p);
  } catch (e) {
    // Out of step (a missed event): start over with a whole view.
    console.warn(String(e));
    reconnect();
    return;
  }
  state.view = v;
  heatmap.view = v;
  heatmap.patchNodes(p.nodes.map((n) => n.at));
  const drawn = performance.now();
  renderTables(v, { queues: p.queues !== undefined, pending: p.pending !== undefined, running: p.running !== undefined });
  if (p.queues !== undefined && heatmap.mode === 'queue') legend();
  const tabled = performance.now();
  if (p.nodes.length === 0 && p.queues === undefined && p.pending === undefined && p.running === undefined) return;
  void nextFrame().then(() =>
    state.paints.push({
      kind: 'patch',
      seq: v.seq,
      nodes: p.nodes.length,
      ms: performance.now() - receivedAt,
      parseMs: parsed - receivedAt,
      heatmapMs: drawn - parsed,
      tablesMs: tabled - drawn,
      wallMs: Date.now(),
    }),
  );
}

let source;
function connect() {
  const status = $('status');
  source = new EventSource(STREAM);
  source.addEventListener('view', (e) => onView(e.data, performance.now()));
  source.addEventListener('patch', (e) => onPatch(e.data, performance.now()));
  source.onopen = () => {
    state.connected = true;
    status.textContent = 'live';
    status.className = 'badge status-live';
  };
  source.onerror = () => {
    state.connected = false;
    state.errors++;
    status.textContent = 'reconnecting…';
    status.className = 'badge status-lost';
  };
}
function reconnect() {
  source?.close();
  state.view = undefined;
  connect();
}

$('replay-restart').addEventListener('click', () => void restartReplay());

$('colour-by').addEventListener('change', (e) => {
  heatmap.setMode(e.target.value);
  legend();
});

const canvas = $('heatmap');
canvas.addEventListener('mousemove', (e) => {
  const v = state.view;
  const r = canvas.getBoundingClientRect();
  const hit = v === undefined ? undefined : heatmap.hit(e.clientX - r.left, e.clientY - r.top);
  if (hit === undefined) {
    tooltip.hidden = true;
    return;
  }
  const n = v.nodes[hit.node];
  const lines = [
    `${n.name}  (${n.model || 'no GPU'})`,
    `zone ${n.zone} · block ${n.block} · rack ${n.rack}${n.nvlinkDomain === undefined ? '' : ` · NVLink domain ${n.nvlinkDomain}`}`,
  ];
  if (hit.gpu !== undefined) {
    const g = n.gpus[hit.gpu];
    lines.push(`GPU ${g.index} · ${nvlinkLabel(n, g)} · ${g.healthy ? 'healthy' : 'UNHEALTHY'} · ${g.usedMilli}/1000 milli allocated`);
    for (const id of g.pods) {
      const p = n.pods.find((x) => x.pod === id);
      if (p !== undefined)
        lines.push(
          `  pod ${p.pod}\n    job ${p.job} · queue ${p.queue}\n    devices ${p.gpus.join(',')}${p.gpuMilli < 1000 ? ` · ${p.gpuMilli} milli each` : ''}`,
        );
    }
    if (g.pods.length === 0) lines.push('  free');
  }
  tooltip.textContent = lines.join('\n');
  tooltip.hidden = false;
  // Fixed to the viewport: never clipped by the section, kept inside the window.
  const tw = tooltip.offsetWidth;
  const th = tooltip.offsetHeight;
  tooltip.style.left = `${Math.max(0, Math.min(e.clientX + 14, window.innerWidth - tw - 4))}px`;
  tooltip.style.top = `${e.clientY + 14 + th > window.innerHeight ? Math.max(0, e.clientY - th - 8) : e.clientY + 14}px`;
});
canvas.addEventListener('mouseleave', () => {
  tooltip.hidden = true;
});

let resizeTimer;
window.addEventListener('resize', () => {
  clearTimeout(resizeTimer);
  resizeTimer = setTimeout(() => state.view !== undefined && heatmap.setView(state.view), 150);
});

connect();

// Long animation frames (Chromium): where a slow update spends its time, for the benchmark's details.
state.longFrames = [];
if (typeof PerformanceObserver !== 'undefined' && PerformanceObserver.supportedEntryTypes?.includes('long-animation-frame')) {
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      state.longFrames.push({
        duration: Math.round(e.duration),
        blocking: Math.round(e.blockingDuration),
        render: Math.round(e.startTime + e.duration - e.renderStart),
        styleLayout: Math.round(e.startTime + e.duration - e.styleAndLayoutStart),
        scripts: e.scripts.map((x) => `${x.invoker} ${Math.round(x.duration)}`).slice(0, 3),
      });
      if (state.longFrames.length > 100) state.longFrames.shift();
    }
  }).observe({ type: 'long-animation-frame', buffered: true });
}
