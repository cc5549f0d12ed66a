import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkScenario, loadScenarioText } from './scenario.ts';

const dir = join(import.meta.dirname, '../../scenarios');
const filesIn = (sub: string): string[] =>
  readdirSync(join(dir, sub))
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((f) => (sub === '' ? f : `${sub}/${f}`));
const files = filesIn('');
const queueFiles = filesIn('queues');
const kubeFiles = filesIn('kube');

function run(f: string): void {
  const s = loadScenarioText(`scenarios/${f}`, readFileSync(join(dir, f), 'utf8'));
  if (!s.ok) throw s.error;
  const { failures } = checkScenario(s.value);
  expect(failures).toEqual([]);
}

describe('declarative scenarios', () => {
  it('finds the scenario files', () => {
    expect(files.length).toBeGreaterThanOrEqual(6);
  });
  for (const f of files) it(f, () => run(f));
});

describe('declarative queue scenarios (issue 6)', () => {
  it('finds the scenario files', () => {
    expect(queueFiles.length).toBeGreaterThanOrEqual(16);
  });
  for (const f of queueFiles) it(f, () => run(f));
});

describe("declarative scenarios of kube-scheduler's per-node plugins (issue 11)", () => {
  it('finds the scenario files', () => {
    expect(kubeFiles.length).toBeGreaterThanOrEqual(6);
  });
  for (const f of kubeFiles) it(f, () => run(f));
});

describe('scenario checks can fail', () => {
  it('reports a wrong expected node', () => {
    const s = loadScenarioText(
      'inline.yaml',
      `name: wrong
cluster: {nodes: [{name: n0, shape: t4x4}]}
workload: {pods: [{name: p, gpu: 1}]}
expect:
  - {pod: p, node: n9}
`,
    );
    if (!s.ok) throw s.error;
    expect(checkScenario(s.value).failures).toEqual(['inline.yaml:5: pod p on n0, expected n9']);
  });
  it('names the line of a bad expectation', () => {
    const s = loadScenarioText('inline.yaml', `name: bad\ncluster: {nodes: [{name: n0, shape: t4x4}]}\nworkload: {}\nexpect:\n  - {pod: p, gang: g}\n`);
    expect(s.ok).toBe(false);
    if (!s.ok) expect(s.error.message).toBe('inline.yaml:5:5: expect[0]: give exactly one of gang, pod, pending');
  });
});

describe('queue scenarios: failures and bad input name the file, line and field', () => {
  const scenario = (queues: string, rest = `jobs:\n  - {name: j, queue: a, pod: {gpu: 8}}\nexpect:\n  - {admitted: j}\n`): string =>
    `name: q\ncluster: {nodes: [{name: n0, shape: dgx-h100}]}\nqueues:\n${queues}${rest}`;
  const errorOf = (text: string): string => {
    const s = loadScenarioText('q.yaml', text);
    if (s.ok) throw new Error('expected an input error');
    return s.error.message;
  };

  it('an unmet expectation says what happened instead', () => {
    const s = loadScenarioText('q.yaml', scenario('  - {name: a, resources: [{name: nvidia.com/gpu, nominal: 4}]}\n'));
    if (!s.ok) throw s.error;
    expect(checkScenario(s.value).failures).toEqual(['q.yaml:8: expected j to be admitted; held (quota): queue a quota: 8 GPU would exceed nominal 4 GPU']);
  });

  it('a tier that does not exist', () => {
    expect(errorOf(scenario('  - {name: a, tier: platinum}\n'))).toBe('q.yaml:4:21: queues[0].tier: "platinum" is not one of "gold", "silver", "bronze"');
  });

  it('an unknown queue field', () => {
    expect(errorOf(scenario('  - name: a\n    quota: 8\n'))).toBe('q.yaml:5:12: queues[0].quota: unknown field');
  });

  it('a preemption policy Kueue does not have', () => {
    expect(errorOf(scenario('  - {name: a, preemption: {reclaimWithinCohort: Sometimes}}\n'))).toBe(
      'q.yaml:4:49: queues[0].preemption.reclaimWithinCohort: "Sometimes" is not one of "Never", "LowerPriority", "Any"',
    );
  });

  it('the CRD rules: limits need a cohort, guaranteed at most nominal, tier or weight', () => {
    const e = errorOf(
      scenario('  - name: a\n    tier: gold\n    weight: 3\n    resources:\n      - {name: nvidia.com/gpu, nominal: 4, borrowingLimit: 4, guaranteed: 8}\n'),
    );
    expect(e.split('\n')).toEqual([
      'q.yaml:6:13: queues[0].weight: set tier or weight, not both',
      'q.yaml:4:5: queues[0].cohort: borrowingLimit and lendingLimit require a cohort',
      'q.yaml:8:75: queues[0].resources[0].guaranteed: guaranteed must not exceed nominal',
    ]);
  });

  it('a job in a queue that does not exist, and an expectation about a job that does not exist', () => {
    expect(errorOf(scenario('  - {name: a}\n', `jobs:\n  - {name: j, queue: b, pod: {gpu: 1}}\nexpect:\n  - {admitted: k}\n`)).split('\n')).toEqual([
      'q.yaml:6:22: jobs[0].queue: unknown queue "b" (queues: a)',
      'q.yaml:8:16: expect[0].admitted: no job named "k"',
    ]);
  });

  it('a modifier that does not belong to the expectation', () => {
    expect(errorOf(scenario('  - {name: a}\n', `jobs:\n  - {name: j, queue: a, pod: {gpu: 1}}\nexpect:\n  - {running: j, reason: quota}\n`))).toBe(
      'q.yaml:8:26: expect[0].reason: does not apply to running (use nothing else)',
    );
  });
});
