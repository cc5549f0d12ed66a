import { describe, expect, it } from 'vitest';
import { anyOf, readGinkgoReport } from './upstream-e2e.ts';
import { missingAllocatable } from './fake-node-status.ts';

const spec = (leaf: string, state: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  ContainerHierarchyTexts: ['[sig-scheduling] SchedulerPredicates [Serial]'],
  LeafNodeType: 'It',
  LeafNodeText: leaf,
  State: state,
  RunTime: 12_345_000_000,
  ...extra,
});

describe('readGinkgoReport', () => {
  const report = JSON.stringify([
    {
      SuiteDescription: 'Kubernetes e2e suite',
      SpecReports: [
        { LeafNodeType: 'SynchronizedBeforeSuite', State: 'passed' },
        spec('validates that NodeSelector is respected if matching [Conformance]', 'passed'),
        spec('validates resource limits of pods that are allowed to run [Conformance]', 'failed', {
          Failure: {
            Message: 'Expected\n    <int>: 1\nto equal\n    <int>: 0',
            Location: { FileName: '/root/go/pkg/mod/k8s.io/kubernetes@v1.36.3/test/e2e/scheduling/predicates.go', LineNumber: 1162 },
          },
        }),
        spec('verify pod overhead is accounted for', 'timedout'),
        spec('validates local ephemeral storage resource limits of pods that are allowed to run', 'skipped'),
        { ...spec('should create a LimitRange with defaults', 'skipped'), ContainerHierarchyTexts: ['[sig-scheduling] LimitRange'] },
      ],
    },
  ]);

  it('keeps the focused cases with their state, time and failure, in order', () => {
    const cases = readGinkgoReport(report, /SchedulerPredicates/);
    expect(cases.map((c) => [c.name.replace('[sig-scheduling] SchedulerPredicates [Serial] ', ''), c.state])).toEqual([
      ['validates that NodeSelector is respected if matching [Conformance]', 'passed'],
      ['validates resource limits of pods that are allowed to run [Conformance]', 'failed'],
      ['verify pod overhead is accounted for', 'failed'],
      ['validates local ephemeral storage resource limits of pods that are allowed to run', 'skipped'],
    ]);
    expect(cases[0]?.seconds).toBe(12.35);
    expect(cases[1]?.message).toContain('to equal');
    expect(cases[1]?.location).toBe('test/e2e/scheduling/predicates.go:1162');
    expect(cases[2]?.ginkgoState).toBe('timedout');
  });

  it('names a failed suite node (a broken setup explains why nothing ran)', () => {
    const broken = JSON.stringify([{ SpecReports: [{ LeafNodeType: 'SynchronizedBeforeSuite', State: 'failed', Failure: { Message: 'no nodes' } }] }]);
    expect(readGinkgoReport(broken, /x/)).toEqual([{ name: 'SynchronizedBeforeSuite', state: 'failed', seconds: 0, message: 'no nodes' }]);
  });

  it('rejects what is not a ginkgo report with a clear error', () => {
    expect(() => readGinkgoReport('{"not":"an array"}', /x/)).toThrow('expected an array of suite reports');
    expect(() => readGinkgoReport('{', /x/)).toThrow(/^ginkgo JSON report: /);
  });
});

describe('anyOf', () => {
  it('matches each text literally', () => {
    const re = new RegExp(anyOf(['validates 4 pods with MaxSkew=1 are evenly distributed into 2 nodes', 'a [Conformance] (b)']));
    expect(re.test('[sig-scheduling] PodTopologySpread Filtering validates 4 pods with MaxSkew=1 are evenly distributed into 2 nodes')).toBe(true);
    expect(re.test('x a [Conformance] (b)')).toBe(true);
    expect(re.test('a C (b)')).toBe(false);
  });
});

describe('missingAllocatable', () => {
  it('copies extended resources a test put in capacity only, never what a kubelet computes itself', () => {
    const node = {
      status: {
        capacity: { cpu: '8', pods: '110', 'example.com/beardsecond': '1000', 'scheduling.k8s.io/foo': '5' },
        allocatable: { cpu: '7', 'scheduling.k8s.io/foo': '5' },
      },
    };
    expect(missingAllocatable(node)).toEqual({ 'example.com/beardsecond': '1000' });
  });
});
