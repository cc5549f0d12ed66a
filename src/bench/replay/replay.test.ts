import { describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { makePod } from '../../core/model/pod.ts';
import { benchNodes } from '../throughput/workload.ts';
import { replay } from './replay.ts';
import { compressTime, detectFormat, loadClusterSource, loadUnits, parseClusterSize } from './sources.ts';
import { jobUnits, type ReplayUnit } from './units.ts';

const H = 3600e3;
const pod = (id: string, gpus: number, arrivalMs: number, durationMs: number, deadlineMs = Number.POSITIVE_INFINITY): ReplayUnit => ({ id, arrivalMs, durationMs, deadlineMs, pod: makePod(id, { cpuMilli: 1000, gpuCount: gpus }) });

describe('replay', () => {
  const nodes = benchNodes(2, 8); // 16 GPUs
  it('queues what does not fit, starts it when capacity frees, and measures the delay', () => {
    const units = [pod('a', 8, 0, 2 * H), pod('b', 8, 0, 2 * H), pod('c', 8, H, H)];
    const r = replay(nodes, units, { policy: 'sits' });
    expect(r.placedPods).toBe(3);
    expect(r.queueDelayS.max).toBe(3600); // c waits from 1 h to 2 h
    expect(r.peakAllocationPct).toBe(100);
    expect(r.gpuUtilisationPct).toBe(100); // window = first to last arrival (0..1 h), fully allocated
  });
  it('abandons a unit whose deadline passes while it waits', () => {
    const units = [pod('a', 8, 0, 5 * H), pod('a2', 8, 0, 5 * H), pod('b', 1, 0, H, 2 * H)];
    const r = replay(nodes, units, { policy: 'fgd' });
    expect(r.neverPlaced).toMatchObject({ pods: 1, abandoned: 1, waitingAtEnd: 0 });
  });
  it('places gangs all-or-nothing and counts pods never placed at the end', () => {
    const units = jobUnits([
      { name: 'wide', submitS: 0, durationS: 100, gpus: 24, group: 'g', line: 2 },
      { name: 'ok', submitS: 0, durationS: 100, gpus: 16, group: 'g', line: 3 },
    ]);
    const r = replay(nodes, units, { policy: 'sits' });
    expect(r.placedPods).toBe(2); // the 16-GPU gang (2 pods)
    expect(r.neverPlaced).toMatchObject({ pods: 3, waitingAtEnd: 1 });
  });
  it('with a window (untilMs), counts only what arrived in it: later pods are not arrived, not never placed', () => {
    const units = [pod('a', 8, 0, H), pod('b', 8, H, H), pod('later', 1, 10 * H, H), pod('later2', 1, 11 * H, H)];
    const r = replay(nodes, units, { policy: 'sits', untilMs: 2 * H });
    expect(r).toMatchObject({ units: 2, pods: 2, placedPods: 2, notArrived: { units: 2, pods: 2 } });
    expect(r.neverPlaced).toMatchObject({ pods: 0, waitingAtEnd: 0 });
    // Without a window every unit arrives and there is no such field.
    const all = replay(nodes, units, { policy: 'sits' });
    expect(all).toMatchObject({ units: 4, placedPods: 4 });
    expect(all.notArrived).toBeUndefined();
  });
  it('GPU-node failures evict and requeue; the same seed gives the same result', () => {
    const units = Array.from({ length: 40 }, (_, i) => pod(`p${i}`, 1, i * 0.25 * H, 4 * H));
    const opts = { policy: 'sits', seed: 7, failures: { mtbfMs: 3 * H, repairMs: H } };
    const a = replay(nodes, units, opts);
    expect(a.failures).toBeGreaterThan(0);
    expect(a.evictions).toBeGreaterThan(0);
    expect(JSON.stringify(replay(nodes, units, opts))).toBe(JSON.stringify(a));
  });
});

describe('replay sources', () => {
  const fixture = (f: string): string => fileURLToPath(new URL(`../../sim/testdata/${f}`, import.meta.url));
  it('recognises formats and loads the openb fixture with its times', () => {
    expect(detectFormat('w.yaml', '')).toBe('yaml');
    expect(detectFormat('x.csv', 'timestamp,duration,num_gpus,gpu_time,cluster\n')).toBe('philly');
    expect(detectFormat('x.csv', 'name,time,application,num_replicas,batch_size\n')).toBe('pollux');
    const { format, units } = loadUnits(fixture('tiny_pods.csv'));
    expect(format).toBe('openb');
    expect(units).toHaveLength(280);
    const r = replay(loadClusterSource({ kind: 'openb', file: fixture('tiny_nodes.csv') }), compressTime(units, 20), { policy: 'sits' });
    expect(r.placedPods + r.neverPlaced.pods).toBe(280);
  });
  it('parses NxG cluster sizes', () => {
    expect(parseClusterSize('64x8')).toEqual({ nodes: 64, gpusPerNode: 8 });
    expect(parseClusterSize('64*8')).toBeUndefined();
  });
});
