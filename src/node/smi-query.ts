/**
 * Reads `nvidia-smi -q -x` (the XML form of `nvidia-smi -q`; its DTD changes between drivers, v11 to v13 are
 * covered by the captures in testdata/). Only what the node agent and the device plugin need: per GPU the
 * product, architecture, UUID, minor number (/dev/nvidia<minor>), PCI bus id, memory, MIG mode and the
 * signs that a device should not be handed out (see `unhealthyReasons`).
 *
 * GPUs are numbered in document order, which is nvidia-smi's own index order (PCI bus order): the index
 * `CUDA_VISIBLE_DEVICES`, `NVIDIA_VISIBLE_DEVICES` and SITS's gpu-indices use.
 */
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { err, ok, type Result } from '../core/result.ts';

export interface SmiGpu {
  /** nvidia-smi / NVML index. */
  readonly index: number;
  readonly product: string;
  /** "Ampere", "Hopper", …; "" when the driver does not say (before 450). */
  readonly architecture: string;
  readonly uuid: string;
  /** The N of /dev/nvidiaN; not the index in general (see testdata/README.md, the two A5000s). */
  readonly minorNumber: number;
  /** Linux form, lower case, 4-digit domain: `0000:81:00.0` (the folder under /sys/bus/pci/devices). */
  readonly pciBusId: string;
  readonly memoryMiB: number;
  readonly migEnabled: boolean;
  /** Why the device must not be allocated; empty when healthy. */
  readonly unhealthyReasons: readonly string[];
}

export interface SmiQuery {
  readonly driverVersion: string;
  readonly attachedGpus: number;
  readonly gpus: readonly SmiGpu[];
}

type XmlNode = Record<string, unknown>;

const parser = new XMLParser({ ignoreAttributes: false, parseTagValue: false, trimValues: true, isArray: (name) => name === 'gpu' });

const text = (v: unknown): string => (typeof v === 'string' ? v.trim() : typeof v === 'number' ? String(v) : '');
const child = (v: unknown, key: string): unknown => (v !== null && typeof v === 'object' ? (v as XmlNode)[key] : undefined);
const at = (v: unknown, ...path: string[]): string => text(path.reduce<unknown>((acc, k) => child(acc, k), v));

/** A count field: a number, or 0 for N/A (no ECC on this board) and for absent fields. */
const count = (v: string): number => (/^\d+$/.test(v) ? Number(v) : 0);

/**
 * Signs that a device is broken or about to be taken away, from fields present since the 450 drivers:
 * uncorrectable ECC errors since the driver loaded, a pending page retirement or row remap (the GPU needs a
 * reset), a row-remapping failure, "reset required" and a recovery action other than None. A GPU in MIG mode
 * cannot be given whole to a container, so it is reported too.
 */
function unhealthyReasons(g: unknown, migEnabled: boolean): string[] {
  const out: string[] = [];
  const vol = child(child(g, 'ecc_errors'), 'volatile');
  // v11/v12: sram_/dram_uncorrectable; v13 splits SRAM into _parity and _secded; old drivers: double_bit.total.
  const uncorrectable =
    ['sram_uncorrectable', 'sram_uncorrectable_parity', 'sram_uncorrectable_secded', 'dram_uncorrectable'].reduce((s, k) => s + count(at(vol, k)), 0) +
    count(at(vol, 'double_bit', 'total'));
  if (uncorrectable > 0) out.push(`${uncorrectable} volatile uncorrectable ECC error(s)`);
  if (at(g, 'retired_pages', 'pending_retirement') === 'Yes') out.push('page retirement pending (needs a reset)');
  const rows = child(g, 'remapped_rows');
  if (at(rows, 'remapped_row_pending') === 'Yes') out.push('row remapping pending (needs a reset)');
  if (at(rows, 'remapped_row_failure') === 'Yes') out.push('row remapping failed');
  if (at(g, 'gpu_reset_status', 'reset_required') === 'Yes') out.push('reset required');
  const recovery = at(g, 'gpu_recovery_action');
  if (recovery !== '' && recovery !== 'None' && recovery !== 'N/A') out.push(`recovery action ${recovery}`);
  if (migEnabled) out.push('MIG mode is enabled (MIG devices are not whole GPUs)');
  return out;
}

/** `00000000:81:00.0` (NVML) → `0000:81:00.0` (sysfs). */
export function linuxBusId(nvml: string): string {
  const m = /^([0-9a-fA-F]{4,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])$/.exec(nvml.trim());
  if (m === null) return nvml.trim().toLowerCase();
  return `${(m[1] as string).slice(-4)}:${m[2]}:${m[3]}.${m[4]}`.toLowerCase();
}

export function parseSmiQueryXml(xml: string): Result<SmiQuery, string> {
  if (xml.trim() === '') return err('nvidia-smi -q -x printed nothing');
  const valid = XMLValidator.validate(xml);
  if (valid !== true)
    return err(`nvidia-smi -q -x: not well-formed XML at line ${valid.err.line}, column ${valid.err.col}: ${valid.err.msg} (truncated output?)`);
  const doc = parser.parse(xml) as XmlNode;
  const log = doc.nvidia_smi_log;
  if (log === undefined || log === null || typeof log !== 'object')
    return err('nvidia-smi -q -x: no <nvidia_smi_log> element (is this the XML of `nvidia-smi -q -x`?)');
  const attachedText = at(log, 'attached_gpus');
  if (!/^\d+$/.test(attachedText)) return err(`nvidia-smi -q -x: <attached_gpus> is "${attachedText}", expected a number`);
  const raw = (child(log, 'gpu') as unknown[] | undefined) ?? [];
  const gpus: SmiGpu[] = [];
  for (const [index, g] of raw.entries()) {
    const where = `nvidia-smi -q -x: <gpu> ${index + 1}`;
    const product = at(g, 'product_name');
    if (product === '') return err(`${where}: no <product_name>`);
    const busRaw = at(g, 'pci', 'pci_bus_id') || text(child(g, '@_id'));
    if (busRaw === '') return err(`${where} (${product}): no <pci><pci_bus_id>`);
    const minorText = at(g, 'minor_number');
    // N/A on Windows (WDDM); a Linux node always has the device file.
    if (!/^\d+$/.test(minorText)) return err(`${where} (${product}): <minor_number> is "${minorText}", expected the N of /dev/nvidiaN`);
    const mem = /^(\d+) MiB$/.exec(at(g, 'fb_memory_usage', 'total'));
    if (mem === null) return err(`${where} (${product}): <fb_memory_usage><total> is "${at(g, 'fb_memory_usage', 'total')}", expected "<n> MiB"`);
    const migEnabled = at(g, 'mig_mode', 'current_mig') === 'Enabled';
    gpus.push({
      index,
      product,
      architecture: at(g, 'product_architecture'),
      uuid: at(g, 'uuid'),
      minorNumber: Number(minorText),
      pciBusId: linuxBusId(busRaw),
      memoryMiB: Number(mem[1]),
      migEnabled,
      unhealthyReasons: unhealthyReasons(g, migEnabled),
    });
  }
  return ok({ driverVersion: at(log, 'driver_version'), attachedGpus: Number(attachedText), gpus });
}
