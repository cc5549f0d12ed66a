/**
 * dcgm-exporter's /metrics, read into one record per GPU. The text is parsed by the one Prometheus parser
 * (core/prom-text.ts); this file only knows dcgm-exporter's names and labels: `gpu` (index), `UUID`,
 * `device` (nvidia0), `modelName`, `Hostname` (or `hostname` in newer releases), `pci_bus_id`, and on
 * Kubernetes `namespace`/`pod`/`container` of the pod using the device. MIG instances (`GPU_I_ID`) report
 * device-wide fields once per instance: they are folded into their GPU (the largest value wins).
 */
import { parsePromText, PromParseError } from '../prom-text.ts';
import { err, ok, type Result } from '../result.ts';

/** The fields the health detector reads; absent when the exporter does not export them (or DCGM has no value). */
export interface DcgmFields {
  tempC?: number;
  memoryTempC?: number;
  powerW?: number;
  /** Value of the last XID seen (DCGM_FI_DEV_XID_ERRORS is a gauge holding the XID number, 0 for none). */
  lastXid?: number;
  sbeVolTotal?: number;
  dbeVolTotal?: number;
  sbeAggTotal?: number;
  dbeAggTotal?: number;
  retiredSbe?: number;
  retiredDbe?: number;
  retiredPending?: number;
  nvlinkCrcFlitTotal?: number;
  nvlinkCrcDataTotal?: number;
  correctableRemappedRows?: number;
  uncorrectableRemappedRows?: number;
  rowRemapFailure?: number;
  rowRemapPending?: number;
  pcieReplayTotal?: number;
}

export interface DcgmPodRef {
  readonly namespace: string;
  readonly pod: string;
  readonly container: string;
}

export interface DcgmDevice {
  /** `Hostname`/`hostname` label ('' when the exporter runs with --no-hostname). */
  readonly host: string;
  readonly gpu: number;
  readonly uuid: string;
  readonly model: string;
  /** XIDs DCGM_FI_DEV_XID_ERRORS_ACTIVE / DCGM_EXP_XID_ERRORS_COUNT reports within its window. */
  readonly activeXids: readonly number[];
  readonly pods: readonly DcgmPodRef[];
  readonly fields: Readonly<DcgmFields>;
}

const FIELD_OF: Readonly<Record<string, keyof DcgmFields>> = {
  DCGM_FI_DEV_GPU_TEMP: 'tempC',
  DCGM_FI_DEV_MEMORY_TEMP: 'memoryTempC',
  DCGM_FI_DEV_POWER_USAGE: 'powerW',
  DCGM_FI_DEV_XID_ERRORS: 'lastXid',
  DCGM_FI_DEV_ECC_SBE_VOL_TOTAL: 'sbeVolTotal',
  DCGM_FI_DEV_ECC_DBE_VOL_TOTAL: 'dbeVolTotal',
  DCGM_FI_DEV_ECC_SBE_AGG_TOTAL: 'sbeAggTotal',
  DCGM_FI_DEV_ECC_DBE_AGG_TOTAL: 'dbeAggTotal',
  DCGM_FI_DEV_RETIRED_SBE: 'retiredSbe',
  DCGM_FI_DEV_RETIRED_DBE: 'retiredDbe',
  DCGM_FI_DEV_RETIRED_PENDING: 'retiredPending',
  DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL: 'nvlinkCrcFlitTotal',
  DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL: 'nvlinkCrcDataTotal',
  DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS: 'correctableRemappedRows',
  DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS: 'uncorrectableRemappedRows',
  DCGM_FI_DEV_ROW_REMAP_FAILURE: 'rowRemapFailure',
  DCGM_FI_DEV_ROW_REMAP_PENDING: 'rowRemapPending',
  DCGM_FI_DEV_PCIE_REPLAY_COUNTER: 'pcieReplayTotal',
};
const ACTIVE_XID = new Set(['DCGM_FI_DEV_XID_ERRORS_ACTIVE', 'DCGM_EXP_XID_ERRORS_COUNT']);

/**
 * DCGM's "blank" sentinels (DCGM_INT64_BLANK = 0x7ffffffffffffff0 and up, DCGM_FP64_BLANK = 140737488355328):
 * a field the device does not support. Seen in real output (NVIDIA/DCGM#173); they mean "no value", not 9e18 errors.
 */
function blank(v: number): boolean {
  return !Number.isFinite(v) || v >= 9.2e18 || v === 140737488355328;
}

/** Reads one scrape. Errors name the line (the parser's) or the label that is wrong. */
export function readDcgmMetrics(text: string): Result<DcgmDevice[], string> {
  let families;
  try {
    families = parsePromText(text);
  } catch (e) {
    if (e instanceof PromParseError) return err(`dcgm-exporter metrics: ${e.message}`);
    throw e;
  }
  interface Acc {
    host: string;
    gpu: number;
    uuid: string;
    model: string;
    activeXids: Set<number>;
    pods: Map<string, DcgmPodRef>;
    fields: DcgmFields;
  }
  const byKey = new Map<string, Acc>();
  for (const fam of families.values()) {
    for (const s of fam.samples) {
      // Every dcgm-exporter sample names its device and the pods on it; only some carry a field we read.
      if (!s.name.startsWith('DCGM_')) continue;
      const field = FIELD_OF[s.name];
      const active = ACTIVE_XID.has(s.name);
      const l = s.labels;
      const gpuText = l.gpu;
      if (gpuText === undefined) continue; // a node-wide sample (NVSwitch, CPU entities): not a GPU
      if (!/^\d+$/.test(gpuText)) return err(`dcgm-exporter metrics: ${s.name}: label gpu="${gpuText}" is not a device index`);
      const host = l.Hostname ?? l.hostname ?? '';
      const gpu = Number(gpuText);
      const key = `${host}\u0000${gpu}`;
      let a = byKey.get(key);
      if (a === undefined) {
        a = { host, gpu, uuid: l.UUID ?? '', model: l.modelName ?? '', activeXids: new Set(), pods: new Map(), fields: {} };
        byKey.set(key, a);
      }
      const pod = l.pod ?? '';
      if (pod !== '') a.pods.set(`${l.namespace ?? ''}/${pod}/${l.container ?? ''}`, { namespace: l.namespace ?? '', pod, container: l.container ?? '' });
      if ((field === undefined && !active) || blank(s.value)) continue;
      if (active) {
        const x = Number(l.xid ?? l.err_code ?? 'NaN');
        if (s.value > 0 && Number.isInteger(x)) a.activeXids.add(x);
        continue;
      }
      const k = field as keyof DcgmFields;
      const prev = a.fields[k];
      a.fields[k] = prev === undefined ? s.value : Math.max(prev, s.value);
    }
  }
  const out = [...byKey.values()].map((a) => ({
    host: a.host,
    gpu: a.gpu,
    uuid: a.uuid,
    model: a.model,
    activeXids: [...a.activeXids].sort((x, y) => x - y),
    pods: [...a.pods.values()],
    fields: a.fields,
  }));
  out.sort((x, y) => (x.host < y.host ? -1 : x.host > y.host ? 1 : x.gpu - y.gpu));
  return ok(out);
}
