import { describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { parseCsv } from './csv.ts';
import { TraceError } from './errors.ts';
import { loadOpenbNodes, loadOpenbPods, parseOpenbNodes, parseOpenbPods } from './openb.ts';
import { parsePhillyJobs, parsePolluxWorkload, POLLUX_GPU_HOURS } from './philly.ts';

const NODE_HEADER = 'sn,cpu_milli,memory_mib,gpu,model';
const POD_HEADER = 'name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time';

function traceError(fn: () => unknown): TraceError {
  try {
    fn();
  } catch (e) {
    if (e instanceof TraceError) return e;
    throw e;
  }
  throw new Error('expected a TraceError');
}

describe('openb node list', () => {
  it('reads the shipped columns', () => {
    const nodes = parseOpenbNodes(`${NODE_HEADER}\nn0,64000,262144,2,P100\nn1,8000,32768,0,\n`, 'n.csv');
    expect(nodes).toEqual([
      { name: 'n0', cpuMilli: 64000, memoryMiB: 262144, gpuCount: 2, model: 'P100', line: 2 },
      { name: 'n1', cpuMilli: 8000, memoryMiB: 32768, gpuCount: 0, model: '', line: 3 },
    ]);
  });
  it.each([
    ['a non-integer CPU', `${NODE_HEADER}\nn0,64000,262144,2,P100\nn1,lots,1,1,T4\n`, 3, 'cpu_milli', /expected an integer, got "lots"/],
    ['a negative GPU count', `${NODE_HEADER}\nn0,64000,262144,-2,P100\n`, 2, 'gpu', /must be ≥ 0/],
    ['GPUs without a model', `${NODE_HEADER}\nn0,64000,262144,2,\n`, 2, 'model', /needs a GPU model/],
    ['a duplicate name', `${NODE_HEADER}\nn0,1,1,0,\nn0,1,1,0,\n`, 3, 'sn', /already defined on line 2/],
  ])('rejects %s with file, line and field', (_what, text, line, field, msg) => {
    const e = traceError(() => parseOpenbNodes(text, 'nodes.csv'));
    expect(e.file).toBe('nodes.csv');
    expect(e.line).toBe(line);
    expect(e.field).toBe(field);
    expect(e.message).toMatch(msg);
    expect(e.message.startsWith(`nodes.csv:${line}: field "${field}"`)).toBe(true);
  });
  it('rejects a row with too few fields and a missing column', () => {
    expect(traceError(() => parseOpenbNodes(`${NODE_HEADER}\nn0,1,1\n`, 'x.csv')).message).toMatch(/^x\.csv:2: expected 5 fields/);
    const e = traceError(() => parseOpenbNodes('sn,cpu_milli,memory_mib,model\nn0,1,1,T4\n', 'x.csv'));
    expect([e.code, e.line, e.field]).toEqual(['MissingColumn', 1, 'gpu']);
  });
  it('rejects an empty file and an unreadable path', () => {
    expect(traceError(() => parseOpenbNodes('\n\n', 'e.csv')).code).toBe('Empty');
    expect(traceError(() => loadOpenbNodes('/nonexistent/nodes.csv')).message).toMatch(/^\/nonexistent\/nodes\.csv: cannot read/);
  });
});

describe('openb pod list', () => {
  it('applies the paper simulator’s field rules', () => {
    const pods = parseOpenbPods(
      `${POD_HEADER}\np-cpu,8000,1024,0,500,T4,BE,Running,1,5,1\np-share,3000,2048,1,1500,|T4||P100|,LS,Running,2,9,3\np-pending,1000,1,1,200,,BE,Pending,4,8,\n`,
      'p.csv',
    );
    expect(pods[0]).toMatchObject({ name: 'p-cpu', gpuCount: 0, gpuMilli: 0, gpuModels: [], creationS: 1, deletionS: 5, scheduledS: 1 });
    expect(pods[1]).toMatchObject({ gpuCount: 1, gpuMilli: 1000, gpuModels: ['T4', 'P100'] });
    expect(pods[2]?.scheduledS).toBeUndefined();
  });
  it('reads the five-column multigpu files without timestamps', () => {
    const [p] = parseOpenbPods('name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,1,8,1000\n', 'm.csv');
    expect(p).toEqual({ name: 'p0', cpuMilli: 1000, memoryMiB: 1, gpuCount: 8, gpuMilli: 1000, gpuModels: [], line: 2 });
  });
  it.each([
    ['a share with several GPUs', `${POD_HEADER}\np0,1,1,2,500,,LS,Running,1,2,1\n`, 'gpu_milli', /only valid with num_gpu = 1/],
    ['a deletion before creation', `${POD_HEADER}\np0,1,1,1,500,,LS,Running,9,2,9\n`, 'deletion_time', /before creation/],
    ['a decimal memory', `${POD_HEADER}\np0,1,1.5,1,500,,LS,Running,1,2,1\n`, 'memory_mib', /expected an integer/],
    ['a bad timestamp', `${POD_HEADER}\np0,1,1,1,500,,LS,Running,x,2,1\n`, 'creation_time', /expected an integer/],
  ])('rejects %s', (_what, text, field, msg) => {
    const e = traceError(() => parseOpenbPods(text, 'pods.csv'));
    expect([e.line, e.field]).toEqual([2, field]);
    expect(e.message).toMatch(msg);
  });
  it('loads the test fixture', () => {
    const t = loadOpenbPods(fileURLToPath(new URL('../testdata/tiny_pods.csv', import.meta.url)));
    expect(t.pods).toHaveLength(280);
  });
});

describe('CSV reader', () => {
  it('keeps line numbers across blank lines and handles quoted fields', () => {
    const t = parseCsv('a,b\n\n"x,1","say ""hi"""\n', 'q.csv');
    expect(t.rows).toEqual([{ line: 3, fields: ['x,1', 'say "hi"'] }]);
  });
});

describe('Philly and Pollux', () => {
  it('philly.csv: seconds from the first job, trailing blank line ignored', () => {
    const jobs = parsePhillyJobs(
      'timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,66.0,1,66.0,c1\n2017-10-09 06:13:03,2951.0,16,1,c2\n\n',
      'philly.csv',
    );
    expect(jobs.map((j) => [j.submitS, j.durationS, j.gpus, j.group])).toEqual([
      [2932, 66, 1, 'c1'],
      [0, 2951, 16, 'c2'],
    ]);
  });
  it('philly.csv: a malformed timestamp names its line', () => {
    const e = traceError(() => parsePhillyJobs('timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09,66.0,1,66.0,c1\n', 'philly.csv'));
    expect([e.line, e.field]).toEqual([2, 'timestamp']);
  });
  it('workload-N.csv: duration from the application class, unknown applications rejected', () => {
    const [j] = parsePolluxWorkload('name,time,application,num_replicas,batch_size\nbert-1,110,bert,4,12\n', 'w.csv');
    expect(j?.durationS).toBeCloseTo(((POLLUX_GPU_HOURS.bert as number) * 3600) / 4, 9);
    const e = traceError(() => parsePolluxWorkload('name,time,application,num_replicas,batch_size\nx,1,gpt5,4,12\n', 'w.csv'));
    expect([e.line, e.field]).toEqual([2, 'application']);
  });
});
