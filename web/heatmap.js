// The GPU heatmap on one <canvas>: zones stacked, racks flowed left to right inside a zone, one row per node
// (multi-node NVLink domains kept together and marked), GPUs left to right by device index with a gap
// between NVLink islands. A full paint batches cells by colour (80,000 cells in a few fillRect runs); a patch
// repaints only the nodes it names. Hit-testing maps a mouse position back to (node, GPU).

export const COLOURS = {
  background: '#161d26',
  rackBox: '#1b2430',
  rackLine: '#2c3a4b',
  label: '#8b98a8',
  nodeLabel: '#d8dee6',
  free: '#2b3a4c',
  whole: '#f76707',
  fractionLow: '#6b5a1e',
  fractionHigh: '#fcc419',
  unhealthy: '#e64980',
  nvlinkBar: '#4dabf7',
};

const hex = (c) => [parseInt(c.slice(1, 3), 16), parseInt(c.slice(3, 5), 16), parseInt(c.slice(5, 7), 16)];
const mix = (a, b, t) => {
  const x = hex(a);
  const y = hex(b);
  return `#${x
    .map((v, i) =>
      Math.round(v + (y[i] - v) * t)
        .toString(16)
        .padStart(2, '0'),
    )
    .join('')}`;
};
const FRACTION_STEPS = Array.from({ length: 11 }, (_, i) => mix(COLOURS.fractionLow, COLOURS.fractionHigh, i / 10));

/** A stable colour per queue name (hue from a string hash). */
export function queueColour(name) {
  let h = 2166136261;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 16777619);
  const hue = (h >>> 0) % 360;
  return `hsl(${hue} 70% 58%)`;
}

/** The colour of one GPU cell. */
export function cellColour(node, gpu, mode) {
  if (!gpu.healthy) return COLOURS.unhealthy;
  if (gpu.usedMilli <= 0) return COLOURS.free;
  if (mode === 'queue') {
    const pod = node.pods.find((p) => p.pod === gpu.pods[0]);
    return pod === undefined ? COLOURS.whole : queueColour(pod.queue);
  }
  if (gpu.usedMilli >= 1000) return COLOURS.whole;
  return FRACTION_STEPS[Math.max(1, Math.min(9, Math.round(gpu.usedMilli / 100)))];
}

function cellSizeFor(gpus) {
  if (gpus <= 512) return 20;
  if (gpus <= 1024) return 14;
  if (gpus <= 16384) return 8;
  return 5;
}

/** Width of a text in CSS pixels at `px`: the page measures with the canvas; tests and the default estimate. */
const estimate = (text, px) => text.length * px * 0.56;

/**
 * Where every GPU cell and node label is drawn, from the node list alone (so patches need no new layout). Racks
 * of a zone flow left to right and are stretched so that a row of racks fills the width; each node row starts
 * with its name and GPU model (when cells are big enough for a readable line: up to 16,384 GPUs).
 */
export function layoutHeatmap(nodes, width, measure = estimate) {
  let totalGpus = 0;
  for (const n of nodes) totalGpus += n.gpus.length;
  const base = cellSizeFor(totalGpus);
  const gap = base >= 8 ? 2 : 1;
  const islandGap = base >= 8 ? 4 : 2;
  const labels = base >= 8;
  const labelPx = base >= 14 ? 12 : 9;
  const pad = base >= 8 ? 6 : 3;
  const rackLabelH = labels ? 16 : 0;
  const zoneLabelH = 20;
  const domainGap = base >= 8 ? 4 : 2;
  const barW = base >= 8 ? 4 : 2;
  const margin = 8;
  // The island patterns of the nodes (nodes of one shape share one), and the node label columns.
  const shapes = new Map();
  let nameW = 0;
  let modelW = 0;
  for (const n of nodes) {
    const key = n.gpus.map((g) => g.island).join(',');
    if (!shapes.has(key))
      shapes.set(
        key,
        n.gpus.map((g) => g.island),
      );
    if (labels) {
      nameW = Math.max(nameW, measure(n.name, labelPx));
      modelW = Math.max(modelW, measure(n.model || 'no GPU', labelPx));
    }
  }
  // Long names are squeezed (fillText's maxWidth) rather than pushing the cells off the rack.
  nameW = Math.ceil(Math.min(nameW, 240));
  modelW = Math.ceil(Math.min(modelW, 140));
  const labelGap = 8;
  const labelW = labels ? nameW + labelGap + modelW + labelGap : 0;
  /** GPU x offsets of an island pattern at cell size `c`. */
  const offsets = (islands, c) => {
    const xs = [];
    let x = 0;
    for (let i = 0; i < islands.length; i++) {
      if (i > 0 && islands[i] !== islands[i - 1]) x += islandGap;
      xs.push(x);
      x += c + gap;
    }
    return xs;
  };
  const rackWFor = (c) => {
    let nodeW = 0;
    for (const islands of shapes.values()) {
      const xs = offsets(islands, c);
      nodeW = Math.max(nodeW, xs.length === 0 ? 0 : xs[xs.length - 1] + c);
    }
    return labelW + nodeW + 2 * pad + barW + 2;
  };
  // Racks per zone (node index ranges; nodes come in topology order).
  const zoneRanges = [];
  for (let i = 0; i < nodes.length;) {
    const zone = nodes[i].zone;
    const ranges = [];
    while (i < nodes.length && nodes[i].zone === zone) {
      const rackKey = `${nodes[i].block}/${nodes[i].rack}`;
      const start = i;
      while (i < nodes.length && nodes[i].zone === zone && `${nodes[i].block}/${nodes[i].rack}` === rackKey) i++;
      ranges.push({ name: rackKey, start, end: i });
    }
    zoneRanges.push({ zone, ranges });
  }
  // As many racks a row as fit, rows balanced (4 racks where 3 fit: 2 + 2, not 3 + 1), stretched to the full
  // width; a narrow window: one a row, scrolled sideways.
  const minRackW = rackWFor(base);
  const fits = Math.max(1, Math.floor((width + margin) / (minRackW + margin)));
  const grid = zoneRanges.map(({ ranges }) => {
    const rows = Math.ceil(ranges.length / Math.min(fits, ranges.length));
    const perRow = Math.max(1, Math.ceil(ranges.length / rows));
    return { perRow, rackW: Math.max(minRackW, Math.floor((width - (perRow - 1) * margin) / perRow)) };
  });
  // Small clusters: the cells grow (up to 1.4×) into the room the stretched racks leave.
  let c = base;
  if (base >= 14 && grid.length > 0) {
    const room = Math.min(...grid.map((g) => g.rackW));
    while (c < Math.floor(base * 1.4) && rackWFor(c + 1) <= room) c++;
  }
  const rowH = c + gap;
  const patterns = new Map();
  const xsOf = (n) => {
    const key = n.gpus.map((g) => g.island).join(',');
    let xs = patterns.get(key);
    if (xs === undefined) patterns.set(key, (xs = offsets(shapes.get(key), c)));
    return xs;
  };
  const racks = [];
  const zones = [];
  const cells = new Array(nodes.length);
  let y = 0;
  let usedW = width;
  zoneRanges.forEach(({ zone, ranges }, z) => {
    const { perRow, rackW } = grid[z];
    zones.push({ name: zone, y });
    y += zoneLabelH;
    usedW = Math.max(usedW, perRow * rackW + (perRow - 1) * margin);
    let rowMaxH = 0;
    ranges.forEach(({ name, start, end }, k) => {
      if (k > 0 && k % perRow === 0) {
        y += rowMaxH + margin;
        rowMaxH = 0;
      }
      const x = (k % perRow) * (rackW + margin);
      // Height: rows plus a gap between NVLink domains.
      let h = rackLabelH + pad;
      for (let j = start; j < end; j++) {
        if (j > start && nodes[j].nvlinkDomain !== nodes[j - 1].nvlinkDomain) h += domainGap;
        h += rowH;
      }
      h += pad - gap;
      const rack = { name, x, y, w: rackW, h, first: start, last: end - 1, rows: [] };
      let ry = y + rackLabelH + pad;
      const labelX = x + pad + barW + 4;
      for (let j = start; j < end; j++) {
        if (j > start && nodes[j].nvlinkDomain !== nodes[j - 1].nvlinkDomain) ry += domainGap;
        cells[j] = { x: x + pad + barW + 2 + labelW, y: ry, xs: xsOf(nodes[j]) };
        rack.rows.push({ node: j, y: ry, ...(labels ? { labelX, modelX: labelX + nameW + labelGap } : {}) });
        ry += rowH;
      }
      racks.push(rack);
      rowMaxH = Math.max(rowMaxH, h);
    });
    y += rowMaxH + margin;
  });
  return { cell: c, gap, barW, pad, labels, labelPx, nameW, modelW, rackLabelH, width: usedW, height: Math.max(y, 40), racks, zones, cells };
}

export class Heatmap {
  constructor(canvas) {
    this.canvas = canvas;
    this.ctx = canvas.getContext('2d', { alpha: false });
    this.mode = 'allocation';
    this.view = undefined;
    this.layout = undefined;
  }

  /** A whole view: lay out (when the node list or the width changed) and paint everything. */
  setView(view) {
    const width = Math.max(320, Math.floor(this.canvas.parentElement.clientWidth));
    const sameNodes =
      this.view !== undefined &&
      this.layout !== undefined &&
      this.layout.viewWidth === width &&
      this.view.nodes.length === view.nodes.length &&
      this.view.nodes.every((n, i) => n.name === view.nodes[i].name);
    this.view = view;
    if (!sameNodes) {
      const ctx = this.ctx;
      const measure = (text, px) => {
        ctx.font = `${px}px system-ui, sans-serif`;
        return ctx.measureText(text).width;
      };
      this.layout = layoutHeatmap(view.nodes, width, measure);
      this.layout.viewWidth = width;
    }
    this.paintAll();
  }

  /** Nodes changed in place (a patch): repaint their cells only. */
  patchNodes(indices) {
    if (this.layout === undefined) return;
    const ctx = this.ctx;
    const c = this.layout.cell;
    for (const i of indices) {
      const node = this.view.nodes[i];
      const cell = this.layout.cells[i];
      if (node === undefined || cell === undefined) continue;
      for (let g = 0; g < node.gpus.length; g++) {
        ctx.fillStyle = cellColour(node, node.gpus[g], this.mode);
        ctx.fillRect(cell.x + cell.xs[g], cell.y, c, c);
      }
    }
  }

  setMode(mode) {
    this.mode = mode;
    if (this.view !== undefined) this.paintAll();
  }

  paintAll() {
    const L = this.layout;
    const dpr = window.devicePixelRatio || 1;
    const canvas = this.canvas;
    const w = L.width;
    const h = L.height;
    if (canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(h * dpr)) {
      canvas.width = Math.round(w * dpr);
      canvas.height = Math.round(h * dpr);
      canvas.style.height = `${h}px`;
      // Wider than the window only when one rack does not fit (then the section scrolls sideways).
      canvas.style.width = w > L.viewWidth ? `${w}px` : '100%';
    }
    const ctx = this.ctx;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = COLOURS.background;
    ctx.fillRect(0, 0, w, h);
    ctx.font = '12px system-ui, sans-serif';
    ctx.textBaseline = 'top';
    for (const z of L.zones) {
      ctx.fillStyle = COLOURS.label;
      ctx.fillText(`zone ${z.name}`, 0, z.y + 3);
    }
    const nodes = this.view.nodes;
    for (const r of L.racks) {
      ctx.fillStyle = COLOURS.rackBox;
      ctx.fillRect(r.x, r.y, r.w, r.h);
      ctx.strokeStyle = COLOURS.rackLine;
      ctx.lineWidth = 1;
      ctx.strokeRect(r.x + 0.5, r.y + 0.5, r.w - 1, r.h - 1);
      if (L.labels) {
        ctx.fillStyle = COLOURS.label;
        ctx.fillText(r.name, r.x + L.pad, r.y + 3, r.w - 2 * L.pad);
      }
      // Nodes of a multi-node NVLink domain: a bar beside their rows.
      ctx.fillStyle = COLOURS.nvlinkBar;
      for (const row of r.rows) if (nodes[row.node].nvlinkDomain !== undefined) ctx.fillRect(r.x + L.pad, row.y, L.barW, L.cell + L.gap);
    }
    // Node labels: name, then the GPU model dimmer. Kept for tests (the canvas has no text to query).
    this.labels = [];
    if (L.labels) {
      ctx.font = `${L.labelPx}px system-ui, sans-serif`;
      ctx.textBaseline = 'middle';
      for (const r of L.racks) {
        for (const row of r.rows) {
          const n = nodes[row.node];
          const mid = row.y + L.cell / 2;
          const model = n.model || 'no GPU';
          ctx.fillStyle = COLOURS.nodeLabel;
          ctx.fillText(n.name, row.labelX, mid, L.nameW);
          ctx.fillStyle = COLOURS.label;
          ctx.fillText(model, row.modelX, mid, L.modelW);
          this.labels.push({ node: n.name, model, x: row.labelX, y: row.y });
        }
      }
      ctx.textBaseline = 'top';
    }
    // Cells batched by colour: few fillStyle changes however many GPUs.
    const byColour = new Map();
    const c = L.cell;
    for (let i = 0; i < nodes.length; i++) {
      const node = nodes[i];
      const cell = L.cells[i];
      for (let g = 0; g < node.gpus.length; g++) {
        const col = cellColour(node, node.gpus[g], this.mode);
        let list = byColour.get(col);
        if (list === undefined) byColour.set(col, (list = []));
        list.push(cell.x + cell.xs[g], cell.y);
      }
    }
    for (const [col, xy] of byColour) {
      ctx.fillStyle = col;
      for (let k = 0; k < xy.length; k += 2) ctx.fillRect(xy[k], xy[k + 1], c, c);
    }
  }

  /** The (node index, GPU index) under a point in CSS pixels of the canvas, or undefined. */
  hit(x, y) {
    const L = this.layout;
    if (L === undefined) return undefined;
    for (const r of L.racks) {
      if (x < r.x || x >= r.x + r.w || y < r.y || y >= r.y + r.h) continue;
      for (const row of r.rows) {
        if (y < row.y || y >= row.y + L.cell) continue;
        const cell = L.cells[row.node];
        const gx = x - cell.x;
        for (let g = 0; g < cell.xs.length; g++) if (gx >= cell.xs[g] && gx < cell.xs[g] + L.cell) return { node: row.node, gpu: g };
        return { node: row.node, gpu: undefined };
      }
      return undefined;
    }
    return undefined;
  }

  /** The centre of a GPU's cell in CSS pixels (tests read the pixel there). */
  cellCentre(nodeIndex, gpu) {
    const cell = this.layout?.cells[nodeIndex];
    if (cell === undefined) return undefined;
    return { x: cell.x + cell.xs[gpu] + this.layout.cell / 2, y: cell.y + this.layout.cell / 2 };
  }
}
