import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { benchAllCommands, BenchInputError } from './bench-all.ts';

const dir = mkdtempSync(join(tmpdir(), 'sits-bench-all-'));
const traces = join(dir, 'alibaba');
const philly = join(dir, 'philly');
mkdirSync(traces);
mkdirSync(join(philly, 'workloads'), { recursive: true });
for (const f of ['openb_node_list_gpu_node.csv', 'openb_pod_list_default.csv', 'openb_pod_list_cpu050.csv', 'README.md']) writeFileSync(join(traces, f), '');
const base = { out: 'res', traces, philly, seeds: '42-43', workers: 2, fgd: true };
const nodes = join(traces, 'openb_node_list_gpu_node.csv');

describe('sits bench all', () => {
  it('runs the FGD grid per pod list (sorted; the report for default), throughput, admission; steps without input are left out', () => {
    const c = benchAllCommands(base);
    expect(c.slice(0, 2)).toEqual([
      ['bench', 'fgd', '--nodes', nodes, '--pods', join(traces, 'openb_pod_list_cpu050.csv'), '--seeds', '42-43', '--workers', '2', '--json', join('res', 'fgd-cpu050.json')],
      ['bench', 'fgd', '--nodes', nodes, '--pods', join(traces, 'openb_pod_list_default.csv'), '--seeds', '42-43', '--workers', '2', '--json', join('res', 'fgd-default.json'), '--html', join('res', 'fgd-default.html')],
    ]);
    expect(c.map((a) => `${a[1]} ${a.at(-1)}`).slice(2)).toEqual([
      'throughput res/throughput-mixed-1000.json',
      'throughput res/throughput-mixed-5000.json',
      'throughput res/throughput-mixed-10000.json',
      'throughput res/throughput-mixed-10000-100k.json',
      'throughput res/throughput-gang-5000.json',
      'replay res/replay-openb-default-x1000.json',
      'admission res/admission-1000.json',
      'admission res/admission-5000.json',
      'admission res/admission-10000.json',
      'serving res/serving.json',
      'batch res/batch.json',
      'webhook res/webhook.json',
      'training res/training.json',
    ]);
  });
  it('adds the Pollux replay and the tenants experiment when their files exist; --skip-fgd drops the grids', () => {
    writeFileSync(join(philly, 'workloads', 'workload-6.csv'), '');
    writeFileSync(join(philly, 'philly.csv'), '');
    const c = benchAllCommands({ ...base, fgd: false });
    expect(c.filter((a) => a[1] === 'fgd')).toEqual([]);
    expect(c.find((a) => a.includes(join(philly, 'workloads', 'workload-6.csv')))).toEqual(['bench', 'replay', '--trace', join(philly, 'workloads', 'workload-6.csv'), '--cluster-size', '8x8', '--policies', 'sits,fgd,bestfit', '--json', join('res', 'replay-pollux-workload-6.json')]);
    expect(c.find((a) => a[1] === 'tenants')).toEqual(['bench', 'tenants', '--trace', join(philly, 'philly.csv'), '--json', join('res', 'tenants.json')]);
  });
  it('names a missing node list', () => {
    expect(() => benchAllCommands({ ...base, traces: join(dir, 'none') })).toThrow(BenchInputError);
    expect(() => benchAllCommands({ ...base, traces: join(dir, 'none') })).toThrow(`--traces: ${join(dir, 'none', 'openb_node_list_gpu_node.csv')} not found`);
  });
});
