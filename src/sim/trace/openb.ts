/**
 * Loaders for the Alibaba cluster-trace-gpu-v2023 ("openb") node and pod lists, with the field rules of the
 * FGD paper's simulator (../shared/docs/fgd-reproduction.md §1–2):
 * - node: `sn,cpu_milli,memory_mib,gpu,model`; GPU devices 0..gpu-1 of one model.
 * - pod: `name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time]`.
 *   num_gpu = 0 → CPU-only (gpu_milli and gpu_spec ignored); otherwise per-GPU milli = gpu_milli clipped to
 *   1000 (0 stays 0); gpu_spec split on `|`, empty parts dropped. Timestamps are kept when present.
 */
import { readFileSync } from 'node:fs';
import { intField, parseCsv, requireColumns, textField, type CsvTable } from './csv.ts';
import { TraceError } from './errors.ts';
import type { PodTrace, TraceNode, TracePod } from './types.ts';

export function parseOpenbNodes(text: string, file: string): TraceNode[] {
  const t = parseCsv(text, file);
  const [cSn, cCpu, cMem, cGpu, cModel] = requireColumns(t, ['sn', 'cpu_milli', 'memory_mib', 'gpu', 'model']) as [number, number, number, number, number];
  const seen = new Map<string, number>();
  const nodes: TraceNode[] = [];
  for (const row of t.rows) {
    const name = textField(t, row, cSn);
    const prev = seen.get(name);
    if (prev !== undefined) throw new TraceError('Duplicate', file, row.line, 'sn', `node ${name} already defined on line ${prev}`);
    seen.set(name, row.line);
    const gpuCount = intField(t, row, cGpu, { max: 64 });
    const model = textField(t, row, cModel, false);
    if (gpuCount > 0 && model === '') throw new TraceError('BadValue', file, row.line, 'model', `a node with ${gpuCount} GPUs needs a GPU model`);
    nodes.push({ name, cpuMilli: intField(t, row, cCpu), memoryMiB: intField(t, row, cMem), gpuCount, model, line: row.line });
  }
  if (nodes.length === 0) throw new TraceError('Empty', file, 1, undefined, 'no nodes');
  return nodes;
}

function optionalTime(t: CsvTable, row: { line: number; fields: readonly string[] }, col: number): number | undefined {
  if (col < 0) return undefined;
  const s = (row.fields[col] ?? '').trim();
  if (s === '') return undefined;
  return intField(t, row, col);
}

export function parseOpenbPods(text: string, file: string): TracePod[] {
  const t = parseCsv(text, file);
  const [cName, cCpu, cMem, cNum, cMilli] = requireColumns(t, ['name', 'cpu_milli', 'memory_mib', 'num_gpu', 'gpu_milli']) as [
    number,
    number,
    number,
    number,
    number,
  ];
  const cSpec = t.column('gpu_spec');
  const cCreate = t.column('creation_time');
  const cDelete = t.column('deletion_time');
  const cSched = t.column('scheduled_time');
  const seen = new Map<string, number>();
  const pods: TracePod[] = [];
  for (const row of t.rows) {
    const name = textField(t, row, cName);
    const prev = seen.get(name);
    if (prev !== undefined) throw new TraceError('Duplicate', file, row.line, 'name', `pod ${name} already defined on line ${prev}`);
    seen.set(name, row.line);
    const cpuMilli = intField(t, row, cCpu);
    const memoryMiB = intField(t, row, cMem);
    const num = intField(t, row, cNum, { max: 64 });
    const milliRaw = intField(t, row, cMilli);
    const gpuMilli = num === 0 ? 0 : Math.min(milliRaw, 1000);
    if (num > 1 && gpuMilli > 0 && gpuMilli < 1000)
      throw new TraceError('BadValue', file, row.line, 'gpu_milli', `a share below 1000 (${gpuMilli}) is only valid with num_gpu = 1, not ${num}`);
    const gpuModels =
      num === 0 || cSpec < 0
        ? []
        : textField(t, row, cSpec, false)
            .split('|')
            .filter((s) => s !== '');
    const creationS = optionalTime(t, row, cCreate);
    const deletionS = optionalTime(t, row, cDelete);
    const scheduledS = optionalTime(t, row, cSched);
    if (creationS !== undefined && deletionS !== undefined && deletionS < creationS) {
      throw new TraceError('BadValue', file, row.line, 'deletion_time', `deletion ${deletionS} is before creation ${creationS}`);
    }
    pods.push({
      name,
      cpuMilli,
      memoryMiB,
      gpuCount: num,
      gpuMilli,
      gpuModels,
      ...(creationS === undefined ? {} : { creationS }),
      ...(deletionS === undefined ? {} : { deletionS }),
      ...(scheduledS === undefined ? {} : { scheduledS }),
      line: row.line,
    });
  }
  if (pods.length === 0) throw new TraceError('Empty', file, 1, undefined, 'no pods');
  return pods;
}

export function loadOpenbNodes(path: string): TraceNode[] {
  return parseOpenbNodes(readText(path), path);
}

export function loadOpenbPods(path: string): PodTrace {
  return { file: path, pods: parseOpenbPods(readText(path), path) };
}

export function readText(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (e) {
    throw new TraceError('Unreadable', path, 0, undefined, `cannot read: ${(e as Error).message}`);
  }
}
