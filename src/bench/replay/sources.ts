/**
 * Where a replay's cluster and units come from: trace files in any supported format, with the format
 * recognised by extension and header; clusters from an openb node list, our cluster YAML, or `NxG`.
 */
import { readFileSync } from 'node:fs';
import type { NodeSpec } from '../../core/model/node.ts';
import { InputError } from '../../formats/yaml-source.ts';
import { loadClusterText } from '../../formats/cluster-file.ts';
import { loadWorkloadText } from '../../formats/workload-file.ts';
import { toNodeSpec } from '../fgd/workload.ts';
import { TraceError } from '../../sim/trace/errors.ts';
import { parseOpenbNodes, parseOpenbPods, readText } from '../../sim/trace/openb.ts';
import { parsePhillyJobs, parsePolluxWorkload } from '../../sim/trace/philly.ts';
import { benchNodes } from '../throughput/workload.ts';
import { jobUnits, openbUnits, yamlUnits, type ReplayUnit } from './units.ts';

export const TRACE_FORMATS = ['openb', 'philly', 'pollux', 'yaml'] as const;
export type TraceFormat = (typeof TRACE_FORMATS)[number];

export function detectFormat(file: string, text: string): TraceFormat | undefined {
  if (/\.ya?ml$/i.test(file)) return 'yaml';
  const header = text.slice(0, text.indexOf('\n') >>> 0).trim();
  if (header.startsWith('timestamp,duration,num_gpus')) return 'philly';
  if (header.includes('application') && header.includes('num_replicas')) return 'pollux';
  if (header.includes('num_gpu') && header.includes('gpu_milli')) return 'openb';
  return undefined;
}

export function loadUnits(file: string, format?: TraceFormat): { format: TraceFormat; units: ReplayUnit[] } {
  const text = readText(file);
  const f = format ?? detectFormat(file, text);
  if (f === undefined) throw new TraceError('BadDocument', file, 1, undefined, `unknown trace format (header: ${text.slice(0, 80).split('\n')[0]}); pass --format ${TRACE_FORMATS.join('|')}`);
  switch (f) {
    case 'openb': {
      const pods = parseOpenbPods(text, file);
      const withTimes = pods.filter((p) => p.creationS !== undefined && p.deletionS !== undefined);
      if (withTimes.length === 0) throw new TraceError('MissingColumn', file, 1, 'creation_time', 'time-based replay needs creation_time and deletion_time');
      return { format: f, units: openbUnits(pods) };
    }
    case 'philly':
      return { format: f, units: jobUnits(parsePhillyJobs(text, file)) };
    case 'pollux':
      return { format: f, units: jobUnits(parsePolluxWorkload(text, file)) };
    case 'yaml': {
      const r = loadWorkloadText(file, text);
      if (!r.ok) throw r.error;
      // Nothing removes a gate in a replay: a gated pod would wait forever, so say what to write instead.
      const gated = r.value.flatMap((u) => (u.kind === 'pod' ? [u.pod] : u.gang.members)).find((p) => p.schedulingGates !== undefined);
      if (gated !== undefined) throw new InputError([{ file, line: 1, column: 1, field: 'schedulingGates', message: `pod ${gated.id}: schedulingGates have no meaning in a replay (nothing removes them); give the time its gates would go as arrivalSec` }]);
      return { format: f, units: yamlUnits(r.value) };
    }
  }
}

/** Compresses time: arrivals and deadlines are divided by k (durations are kept), so load grows k-fold. */
export function compressTime(units: readonly ReplayUnit[], k: number): ReplayUnit[] {
  if (k === 1) return [...units];
  return units.map((u) => ({ ...u, arrivalMs: u.arrivalMs / k, deadlineMs: Number.isFinite(u.deadlineMs) ? u.arrivalMs / k + (u.deadlineMs - u.arrivalMs) : u.deadlineMs }));
}

export type ClusterSource = { readonly kind: 'openb'; readonly file: string } | { readonly kind: 'yaml'; readonly file: string } | { readonly kind: 'size'; readonly nodes: number; readonly gpusPerNode: number };

/** `64x8` → 64 nodes of 8 GPUs; undefined when malformed. */
export function parseClusterSize(text: string): { nodes: number; gpusPerNode: number } | undefined {
  const m = /^(\d+)x(\d+)$/.exec(text.trim());
  if (m === null) return undefined;
  const nodes = Number(m[1]);
  const gpusPerNode = Number(m[2]);
  return nodes >= 1 && gpusPerNode >= 1 && gpusPerNode <= 64 && nodes <= 1_000_000 ? { nodes, gpusPerNode } : undefined;
}

export function loadClusterSource(c: ClusterSource): NodeSpec[] {
  switch (c.kind) {
    case 'openb':
      return parseOpenbNodes(readText(c.file), c.file).map((n) => toNodeSpec(n));
    case 'yaml': {
      let text: string;
      try {
        text = readFileSync(c.file, 'utf8');
      } catch (e) {
        throw new TraceError('Unreadable', c.file, 0, undefined, `cannot read: ${(e as Error).message}`);
      }
      const r = loadClusterText(c.file, text);
      if (!r.ok) throw r.error;
      return r.value;
    }
    case 'size':
      return benchNodes(c.nodes, c.gpusPerNode);
  }
}

export { InputError };
