/**
 * Import of the GPU matrix printed by `nvidia-smi topo -m`. Cells: X (self), NV<n> (n NVLinks), PIX/PXB
 * (same PCIe switch / several switches), PHB/NODE (same NUMA host bridge), SYS (across sockets).
 * When every GPU pair is NVLinked with the same link count the node is treated as NVSwitch all-to-all.
 * NUMA affinity comes from the "NUMA Affinity" column when present, else from PHB/NODE vs SYS groups.
 */
import { buildTopology, type LinkClass, type NodeGpuTopology } from '../core/model/topology.ts';
import { err, ok, type Result } from '../core/result.ts';

export interface SmiOptions {
  /** GB/s per NVLink per direction (NVLink 2: 25, NVLink 3: 25, NVLink 4: 25 — x links). */
  readonly nvlinkGBpsPerLink?: number;
}

/** The GPU part of a `nvidia-smi topo -m` matrix, as printed: one row of cells per GPU. */
export interface SmiMatrix {
  readonly gpuCount: number;
  /** cells[i][j]: X on the diagonal, else NV<n>, PIX, PXB, PHB, NODE or SYS. */
  readonly cells: readonly (readonly string[])[];
  /** The CPU Affinity column of each row ("0-55,112-167"), "" when the output has none. */
  readonly cpuAffinity: readonly string[];
  /** The NUMA Affinity column of each row, -1 when absent or N/A. */
  readonly numa: readonly number[];
}

/** Reads the GPU rows of `nvidia-smi topo -m` (NIC rows and columns, the legend and blank lines are skipped). */
export function readSmiMatrix(text: string): Result<SmiMatrix, string> {
  const lines = text
    .split('\n')
    .map((l) => l.replace(/\s+$/, ''))
    .filter((l) => l.trim() !== '');
  // The header is indented (`\tGPU0\tGPU1…`), so after trimming it starts like a row: tell them apart by the X cell.
  const headerIdx = lines.findIndex((l) => /\bGPU0\b/.test(l) && !/^\s*GPU0\s+X\b/.test(l));
  const header = lines[headerIdx];
  if (header === undefined) return err('no header line with GPU0 found (paste the whole `nvidia-smi topo -m` output)');
  const cols = header
    .trim()
    .split(/\s{2,}|\t+/)
    .map((c) => c.trim());
  const gpuCols = cols.filter((c) => /^GPU\d+$/.test(c));
  const n = gpuCols.length;
  const numaCol = cols.findIndex((c) => /NUMA Affinity/i.test(c));
  const cpuCol = cols.findIndex((c) => /CPU Affinity/i.test(c));
  const rows = lines.slice(headerIdx + 1).filter((l) => /^GPU\d+\s/.test(l.trimStart()));
  if (rows.length !== n) return err(`header lists ${n} GPUs but ${rows.length} GPU rows follow`);
  const cells: string[][] = [];
  const numa: number[] = [];
  const cpuAffinity: string[] = [];
  for (let i = 0; i < n; i++) {
    const parts = (rows[i] as string).trim().split(/\s+/);
    if (parts[0] !== `GPU${i}`) return err(`row ${i + 1} should start with GPU${i}, found ${parts[0] ?? ''}`);
    const row = parts.slice(1, 1 + n);
    if (row.length !== n) return err(`row GPU${i} has ${row.length} cells, expected ${n}`);
    for (const [j, c] of row.entries()) {
      if (i === j ? c !== 'X' : !/^(NV\d+|PIX|PXB|PHB|NODE|SYS)$/.test(c)) return err(`row GPU${i}, column GPU${j}: unknown cell "${c}"`);
    }
    cells.push(row);
    // Columns after the matrix: CPU Affinity, NUMA Affinity, GPU NUMA ID — read NUMA when it is a number.
    const rest = parts.slice(1 + n);
    const numaGuess = numaCol >= 0 ? rest.find((x, k) => k > 0 && /^\d+$/.test(x)) : undefined;
    numa.push(numaGuess === undefined ? -1 : Number(numaGuess));
    cpuAffinity.push(cpuCol >= 0 ? (rest[0] ?? '') : '');
  }
  return ok({ gpuCount: n, cells, cpuAffinity, numa });
}

/**
 * The matrix in `nvidia-smi topo -m` form (tab separated, GPU rows only), with NUMA nodes given or -1 (N/A):
 * what the node agent writes in the gpu-topology annotation, read back by parseNvidiaSmiTopo.
 */
export function formatSmiMatrix(m: SmiMatrix, numa: readonly number[] = m.numa): string {
  const head = ['', ...Array.from({ length: m.gpuCount }, (_, i) => `GPU${i}`), 'CPU Affinity', 'NUMA Affinity'].join('\t');
  const rows = m.cells.map((row, i) =>
    [
      `GPU${i}`,
      ...row.map((c) => (c === 'X' ? ' X ' : c)),
      m.cpuAffinity[i] === '' ? 'N/A' : (m.cpuAffinity[i] ?? 'N/A'),
      (numa[i] ?? -1) >= 0 ? String(numa[i]) : 'N/A',
    ].join('\t'),
  );
  return [head, ...rows].join('\n') + '\n';
}

export function parseNvidiaSmiTopo(text: string, opts: SmiOptions = {}): Result<NodeGpuTopology, string> {
  const m = readSmiMatrix(text);
  return m.ok ? ok(topologyFromMatrix(m.value, opts)) : m;
}

/** The topology a matrix describes (see the module comment for how cells map to link classes). */
export function topologyFromMatrix(m: SmiMatrix, opts: SmiOptions = {}): NodeGpuTopology {
  const perLink = opts.nvlinkGBpsPerLink ?? 25;
  const n = m.gpuCount;
  const cells = m.cells;
  const numa = [...m.numa];
  if (numa.some((x) => x < 0)) {
    // Group GPUs that reach each other without crossing sockets. An NVLink cell says nothing about the
    // socket, so a GPU joins a group only when it is SYS to none of its members.
    let next = 0;
    for (let i = 0; i < n; i++) numa[i] = -1;
    for (let i = 0; i < n; i++) {
      if (numa[i] !== -1) continue;
      numa[i] = next;
      const group = [i];
      for (let j = i + 1; j < n; j++) {
        if (numa[j] === -1 && group.every((g) => cells[g]?.[j] !== 'SYS')) {
          numa[j] = next;
          group.push(j);
        }
      }
      next++;
    }
  }
  const nvCounts = new Set<number>();
  let allNv = true;
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < n; j++) {
      if (i === j) continue;
      const c = cells[i]?.[j] ?? '';
      if (c.startsWith('NV')) nvCounts.add(Number(c.slice(2)));
      else allNv = false;
    }
  }
  const nvswitch = n > 2 && allNv && nvCounts.size === 1;
  const pcie: number[] = Array.from({ length: n }, (_, i) => i);
  for (let i = 0; i < n; i++) for (let j = 0; j < i; j++) if (cells[i]?.[j] === 'PIX' && pcie[i] === i) pcie[i] = pcie[j] as number;
  return buildTopology({
    gpuCount: n,
    numaOf: numa,
    pcieSwitchOf: pcie,
    pair: (a, b) => {
      const c = cells[a]?.[b] ?? 'SYS';
      if (c.startsWith('NV')) return { cls: nvswitch ? 'nvswitch' : 'nvlink', gbps: Number(c.slice(2)) * perLink };
      const cls: LinkClass = c === 'PIX' || c === 'PXB' ? 'pcie-switch' : c === 'PHB' || c === 'NODE' ? 'numa' : 'cross-socket';
      return c === 'PXB' ? { cls, gbps: 12 } : { cls };
    },
  });
}

/** A NIC row of `nvidia-smi topo -m`: its name from the NIC legend (`NIC0: mlx5_0`) and its cell for each GPU. */
export interface SmiNic {
  readonly name: string;
  readonly toGpu: readonly string[];
}

/**
 * The NIC rows, named from the NIC legend. A NIC the legend does not name is left out: NCCL finds a NIC by its
 * device name, and a made-up name would match nothing. An empty list when the output has no NIC rows.
 */
export function readSmiNics(text: string, gpuCount: number): SmiNic[] {
  const names = new Map<string, string>();
  for (const m of text.matchAll(/^\s*(NIC\d+):\s*(\S+)\s*$/gm)) names.set(m[1] as string, m[2] as string);
  const out: SmiNic[] = [];
  for (const line of text.split('\n')) {
    const parts = line.trim().split(/\s+/);
    const id = parts[0] ?? '';
    if (!/^NIC\d+$/.test(id) || parts.length < 1 + gpuCount) continue;
    const cells = parts.slice(1, 1 + gpuCount);
    const name = names.get(id);
    if (name === undefined || !cells.every((c) => /^(NV\d+|PIX|PXB|PHB|NODE|SYS)$/.test(c))) continue;
    out.push({ name, toGpu: cells });
  }
  return out;
}
