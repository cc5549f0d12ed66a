/**
 * NCCL topology files (the XML NCCL reads from NCCL_TOPO_FILE) for the GPUs and NICs SITS gave a pod, and a reader
 * that turns such a file back into `nvidia-smi topo -m` relations so that it can be checked against the node.
 *
 * What goes in and why: NCCL detects devices itself and fills every attribute a file leaves out (ncclTopoFillGpu /
 * ncclTopoGetXmlFromSys fill only what is missing), so the file carries what detection inside a container or VM
 * gets wrong or cannot see — the PCIe tree (which GPUs and NICs share a switch, which CPU socket they hang off)
 * and the NVLink fabric — and nothing a process knows better (CUDA device index, rank, GDR, CPU vendor and model).
 * GPUs and NICs are matched by NCCL by PCI bus id and by net device name, so GPUs need their real bus ids (the
 * node agent publishes them); PCIe switches get synthetic `ffff:ff:NN.0` ids as vendors' own files do (AWS's
 * p4d-24xl-topo.xml), and NIC PCI ids are synthetic too (`fffe:NN:00.0`) because NCCL finds a NIC by its name.
 * NVLink counts are bandwidth / 25 GB/s per link (what `nvidia-smi topo -m`'s NV<n> says); an NVSwitch fabric is
 * one `<nvlink tclass="0x068000">` per GPU (NCCL merges every NVSwitch into one NVS node).
 */
import { XMLBuilder, XMLParser, XMLValidator } from 'fast-xml-parser';
import type { NicPlacement, NodeGpuTopology } from '../core/model/topology.ts';
import { err, ok, type Result } from '../core/result.ts';
import type { SmiNic } from './nvidia-smi-topo.ts';

/** PCI classes NCCL reads (topo.cc kvDictPciClass). */
export const PCI_CLASS = { bridge: '0x060400', gpu: '0x030200', nic: '0x020000', nvswitch: '0x068000' } as const;
export const GBPS_PER_NVLINK = 25;

export interface NcclTopologyInput {
  readonly topology: NodeGpuTopology;
  /** The node's GPU PCI bus ids by index (Linux form `0000:07:00.0`). */
  readonly busIds: readonly string[];
  /** The GPU indices given to the pod. */
  readonly gpus: readonly number[];
  /** Compute capability as NCCL writes it (80 for 8.0); 0 when unknown (left for NCCL to detect). */
  readonly sm: number;
  readonly nics?: readonly NicPlacement[];
}

const BUS_ID = /^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f]$/;
const NVSWITCH_BUS_ID = 'fffe:ff:00.0';

/** PCIe link speed per lane NCCL understands, by GPU generation (Hopper and later: Gen5; Ampere/Ada: Gen4). */
function linkSpeed(sm: number): string {
  if (sm >= 90) return '32 GT/s';
  if (sm >= 80) return '16 GT/s';
  return '8 GT/s';
}

/** The NICs a pod's GPUs use: those sharing a switch with a given GPU, else those on the given GPUs' NUMA nodes. */
export function nicsFor(nics: readonly NicPlacement[], topology: NodeGpuTopology, gpus: readonly number[]): NicPlacement[] {
  const given = new Set(gpus);
  const near = nics.filter((n) => n.nearGpu !== undefined && given.has(n.nearGpu));
  if (near.length > 0) return near;
  const numas = new Set(gpus.map((g) => topology.numaOf[g]));
  return nics.filter((n) => n.nearGpu === undefined && numas.has(n.numa));
}

type XmlNode = Record<string, unknown>;

/** The XML NCCL reads for these GPUs; an error names what is missing (no bus id for a GPU, a GPU out of range). */
export function ncclTopologyXml(input: NcclTopologyInput): Result<string, string> {
  const t = input.topology;
  const gpus = [...new Set(input.gpus)].sort((a, b) => a - b);
  if (gpus.length === 0) return err('no GPUs given');
  for (const g of gpus) {
    if (!(g >= 0 && g < t.gpuCount)) return err(`GPU ${g} is not on the node (it has ${t.gpuCount})`);
    const id = input.busIds[g];
    if (id === undefined || !BUS_ID.test(id)) return err(`GPU ${g} has no PCI bus id${id === undefined ? '' : ` ("${id}" is not of the form 0000:07:00.0)`}`);
  }
  if (input.busIds.length !== t.gpuCount) return err(`${input.busIds.length} PCI bus ids for ${t.gpuCount} GPUs`);
  const speed = linkSpeed(input.sm);
  const pci = (busid: string, cls: string, extra: XmlNode = {}): XmlNode => ({
    '@_busid': busid,
    '@_class': cls,
    '@_link_speed': speed,
    '@_link_width': '16',
    ...extra,
  });

  const nvlinks = (g: number): XmlNode[] => {
    const out: XmlNode[] = [];
    let fabric = 0;
    for (const o of gpus) {
      if (o === g) continue;
      const cls = t.links[g * t.gpuCount + o];
      const links = Math.max(1, Math.round((t.bandwidthGBps[g * t.gpuCount + o] ?? 0) / GBPS_PER_NVLINK));
      if (cls === 'nvlink') out.push({ '@_target': input.busIds[o], '@_count': String(links), '@_tclass': PCI_CLASS.gpu });
      else if (cls === 'nvswitch') fabric = Math.max(fabric, links);
    }
    if (fabric > 0) out.unshift({ '@_target': NVSWITCH_BUS_ID, '@_count': String(fabric), '@_tclass': PCI_CLASS.nvswitch });
    return out;
  };
  const gpuNode = (g: number): XmlNode => {
    const links = nvlinks(g);
    const gpu: XmlNode = { ...(input.sm > 0 ? { '@_sm': String(input.sm) } : {}), ...(links.length > 0 ? { nvlink: links } : {}) };
    return pci(input.busIds[g] as string, PCI_CLASS.gpu, { gpu });
  };
  const nics = nicsFor(input.nics ?? [], t, gpus);
  const nicNode = (n: NicPlacement): XmlNode =>
    pci(`fffe:${(nics.indexOf(n) + 1).toString(16).padStart(2, '0')}:00.0`, PCI_CLASS.nic, { nic: { net: { '@_name': n.name } } });

  // GPUs share a bridge when the node says they share a PCIe switch (PIX) or reach each other through PCIe
  // switches only (PXB: a `pcie-switch` link between different switch ids).
  const root = gpus.map((_, i) => i);
  const find = (i: number): number => (root[i] === i ? i : (root[i] = find(root[i] as number)));
  for (let i = 0; i < gpus.length; i++) {
    for (let j = 0; j < i; j++) {
      const a = gpus[i] as number;
      const b = gpus[j] as number;
      if (t.pcieSwitchOf[a] === t.pcieSwitchOf[b] || t.links[a * t.gpuCount + b] === 'pcie-switch') root[find(i)] = find(j);
    }
  }
  const switchOf = (g: number): number => gpus[find(gpus.indexOf(g))] as number;

  // One <cpu> per NUMA node; under it one bridge per PCIe switch shared by two or more devices, single devices
  // straight under the CPU (they reach the others only through the host bridge: NODE in nvidia-smi's terms).
  const cpus: XmlNode[] = [];
  const numas = [...new Set([...gpus.map((g) => t.numaOf[g] as number), ...nics.map((n) => n.numa)])].sort((a, b) => a - b);
  let switchNo = 0;
  for (const numa of numas) {
    const here = gpus.filter((g) => t.numaOf[g] === numa);
    const bySwitch = new Map<number, { gpus: number[]; nics: NicPlacement[] }>();
    for (const g of here) {
      const s = switchOf(g);
      const entry = bySwitch.get(s) ?? { gpus: [], nics: [] };
      entry.gpus.push(g);
      bySwitch.set(s, entry);
    }
    const looseNics: NicPlacement[] = [];
    for (const n of nics.filter((x) => x.numa === numa)) {
      const s = n.nearGpu === undefined || !gpus.includes(n.nearGpu) ? undefined : bySwitch.get(switchOf(n.nearGpu));
      if (s === undefined) looseNics.push(n);
      else s.nics.push(n);
    }
    const children: XmlNode[] = [];
    for (const [, group] of [...bySwitch].sort((a, b) => a[0] - b[0])) {
      const devices = [...group.gpus.map(gpuNode), ...group.nics.map(nicNode)];
      if (devices.length === 1) children.push(devices[0] as XmlNode);
      else {
        switchNo++;
        children.push(pci(`ffff:ff:${switchNo.toString(16).padStart(2, '0')}.0`, PCI_CLASS.bridge, { pci: devices }));
      }
    }
    children.push(...looseNics.map(nicNode));
    cpus.push({ '@_numaid': String(numa), pci: children });
  }
  const builder = new XMLBuilder({ ignoreAttributes: false, attributeNamePrefix: '@_', format: true, indentBy: '  ', suppressEmptyNode: true });
  const body = builder.build({ system: { '@_version': '1', cpu: cpus } }) as string;
  return ok(`<!-- NCCL topology written by SITS for GPUs ${gpus.join(',')}; read with NCCL_TOPO_FILE -->\n${body}`);
}

/**
 * Where `nvidia-smi topo -m` puts each NIC: under the switch of the first GPU it is PIX/PXB to, else on the NUMA
 * node of a GPU it is PHB/NODE to; a NIC that is SYS to every GPU has no NUMA node we know and is left out.
 */
export function nicPlacements(nics: readonly SmiNic[], numaOf: readonly number[]): NicPlacement[] {
  const out: NicPlacement[] = [];
  for (const n of nics) {
    const near = n.toGpu.findIndex((c) => c === 'PIX' || c === 'PXB');
    const local = near >= 0 ? near : n.toGpu.findIndex((c) => c === 'PHB' || c === 'NODE');
    const numa = numaOf[local];
    if (local < 0 || numa === undefined || numa < 0) continue;
    out.push({ name: n.name, numa, ...(near >= 0 ? { nearGpu: near } : {}) });
  }
  return out;
}

/** The node annotation form: `mlx5_0@1,mlx5_2@0/3` (name @ NUMA node, / GPU index it shares a switch with). */
export function formatNics(nics: readonly NicPlacement[]): string {
  return nics.map((n) => `${n.name}@${n.numa}${n.nearGpu === undefined ? '' : `/${n.nearGpu}`}`).join(',');
}

export function parseNics(text: string, gpuCount: number): Result<NicPlacement[], string> {
  const out: NicPlacement[] = [];
  for (const item of text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')) {
    const m = /^([A-Za-z0-9_.:-]+)@(\d+)(?:\/(\d+))?$/.exec(item);
    if (m === null) return err(`"${item}" is not name@numa or name@numa/gpu (e.g. mlx5_0@1/3)`);
    const near = m[3] === undefined ? undefined : Number(m[3]);
    if (near !== undefined && near >= gpuCount) return err(`"${item}": GPU ${near} is not on the node (it has ${gpuCount})`);
    out.push({ name: m[1] as string, numa: Number(m[2]), ...(near === undefined ? {} : { nearGpu: near }) });
  }
  return ok(out);
}

/** The node annotation form of GPU bus ids: comma separated, by index. */
export function parseBusIds(text: string, gpuCount: number): Result<string[], string> {
  const ids = text.split(',').map((s) => s.trim().toLowerCase());
  if (ids.length !== gpuCount) return err(`${ids.length} bus ids for ${gpuCount} GPUs`);
  const bad = ids.find((id) => !BUS_ID.test(id));
  return bad === undefined ? ok(ids) : err(`"${bad}" is not a PCI bus id of the form 0000:07:00.0`);
}

// ---------------------------------------------------------------------------------------------
// Reading a file back
// ---------------------------------------------------------------------------------------------

export interface NcclGpu {
  readonly busId: string;
  readonly sm?: number;
  readonly numa: number;
  /** Bus id of the innermost PCIe bridge above the GPU, undefined when it hangs straight off the CPU. */
  readonly bridge?: string;
  readonly nvlinks: readonly { readonly target: string; readonly count: number; readonly tclass: string }[];
}

export interface NcclNic {
  readonly name: string;
  readonly numa: number;
  readonly bridge?: string;
}

export interface NcclTopology {
  readonly gpus: readonly NcclGpu[];
  readonly nics: readonly NcclNic[];
}

const asList = (v: unknown): XmlNode[] => (v === undefined ? [] : Array.isArray(v) ? (v as XmlNode[]) : [v as XmlNode]);
const attr = (n: XmlNode, k: string): string | undefined => {
  const v = n[`@_${k}`];
  return v === undefined ? undefined : String(v);
};

/** Parses a topology file into its GPUs and NICs; an error names the element that is wrong. */
export function readNcclTopology(xml: string): Result<NcclTopology, string> {
  const valid = XMLValidator.validate(xml);
  if (valid !== true) return err(`not XML: ${valid.err.msg} (line ${valid.err.line})`);
  const doc = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '@_', parseAttributeValue: false }).parse(xml) as XmlNode;
  const system = doc['system'] as XmlNode | undefined;
  if (system === undefined) return err('no <system> element');
  const gpus: NcclGpu[] = [];
  const nics: NcclNic[] = [];
  const walk = (node: XmlNode, numa: number, bridge: string | undefined): Result<true, string> => {
    for (const p of asList(node['pci'])) {
      const busid = attr(p, 'busid');
      const cls = attr(p, 'class');
      if (busid === undefined || cls === undefined) return err(`<pci> without busid or class under numa ${numa}`);
      if (cls === PCI_CLASS.bridge) {
        const r = walk(p, numa, busid);
        if (!r.ok) return r;
      } else if (cls === PCI_CLASS.gpu) {
        const g = p['gpu'] as XmlNode | undefined;
        const sm = g === undefined ? undefined : attr(g, 'sm');
        const nvlinks =
          g === undefined
            ? []
            : asList(g['nvlink']).map((l) => ({ target: attr(l, 'target') ?? '', count: Number(attr(l, 'count') ?? '0'), tclass: attr(l, 'tclass') ?? '' }));
        gpus.push({ busId: busid, numa, ...(bridge === undefined ? {} : { bridge }), ...(sm === undefined ? {} : { sm: Number(sm) }), nvlinks });
      } else if (cls === PCI_CLASS.nic) {
        for (const nic of asList(p['nic']))
          for (const net of asList(nic['net'])) nics.push({ name: attr(net, 'name') ?? '', numa, ...(bridge === undefined ? {} : { bridge }) });
      }
    }
    return ok(true);
  };
  for (const cpu of asList(system['cpu'])) {
    const numa = Number(attr(cpu, 'numaid'));
    if (!Number.isInteger(numa)) return err('<cpu> without a numeric numaid');
    const r = walk(cpu, numa, undefined);
    if (!r.ok) return r;
  }
  return ok({ gpus, nics });
}

/** NVLink count between two GPUs of a parsed file (direct links, or both on the NVSwitch fabric), 0 when none. */
function nvlinkCount(a: NcclGpu, b: NcclGpu): number {
  const direct = a.nvlinks.find((l) => l.tclass === PCI_CLASS.gpu && l.target === b.busId);
  if (direct !== undefined) return direct.count;
  const fa = a.nvlinks.find((l) => l.tclass === PCI_CLASS.nvswitch);
  const fb = b.nvlinks.find((l) => l.tclass === PCI_CLASS.nvswitch);
  return fa !== undefined && fb !== undefined ? Math.min(fa.count, fb.count) : 0;
}

/**
 * `nvidia-smi topo -m`'s word for two devices of a parsed file: NV<n>, PIX (same PCIe switch), NODE (same socket)
 * or SYS. The reader cannot tell PIX from PXB or PHB from NODE (nor can NCCL's path types from this file), so the
 * comparison with a real matrix goes through `sameRelation`.
 */
export function relationInFile(a: { numa: number; bridge?: string } & Partial<NcclGpu>, b: { numa: number; bridge?: string } & Partial<NcclGpu>): string {
  if (a.nvlinks !== undefined && b.nvlinks !== undefined && a.busId !== undefined && b.busId !== undefined) {
    const n = nvlinkCount(a as NcclGpu, b as NcclGpu);
    if (n > 0) return `NV${n}`;
  }
  if (a.bridge !== undefined && a.bridge === b.bridge) return 'PIX';
  return a.numa === b.numa ? 'NODE' : 'SYS';
}

/** Same relation up to what a topology file can say (PIX≡PXB, PHB≡NODE; NV<n> exactly). */
export function sameRelation(fromFile: string, fromSmi: string): boolean {
  const cls = (c: string): string => (c === 'PXB' ? 'PIX' : c === 'PHB' ? 'NODE' : c);
  return cls(fromFile) === cls(fromSmi);
}
