import { describe, expect, it } from 'vitest';
import { boundVerdict, histogramDelta, histogramQuantile, kubeSchedulerConfigYaml, nearestRank, parseProcStat, perSecond, promSum, rate, schedulerPerfThroughput } from './measure.ts';
import { promSamples } from '../../harness/prom-text.ts';
import { parse as parseYaml } from 'yaml';

describe('schedulerPerfThroughput (scheduler_perf throughputCollector semantics)', () => {
  it('samples every second, skips the first sample that sees a pod, and drops the partial last interval', () => {
    // 100 pods/s evenly from t=0.5 s to t=5.49 s: ticks at 1..5 s see 51, 151, 251, 351, 451.
    const times = Array.from({ length: 500 }, (_, i) => 500 + i * 10);
    const t = schedulerPerfThroughput(times, 0);
    expect(t?.samples).toBe(4); // tick 1 skipped (start), ticks 2..5 sampled; t=5.49 is before tick 6
    expect(t?.average).toBeCloseTo(100, 6);
    expect(t?.perc50).toBeCloseTo(100, 6);
  });

  it('ignores ticks before the first scheduled pod', () => {
    const times = Array.from({ length: 300 }, (_, i) => 10_000 + i * 10); // nothing for 10 s
    const t = schedulerPerfThroughput(times, 0);
    expect(t?.samples).toBe(2); // ticks 10 (start), 11, 12 (last bind at 12.99 s < tick 13)
    expect(t?.average).toBeCloseTo(100, 6);
  });

  it('folds empty intervals into the next sample and records it once per folded interval', () => {
    // 10 pods by 1 s, then nothing until 3.5 s, then 40 pods; last at 4.2 s.
    const times = [...Array.from({ length: 10 }, (_, i) => 100 + i * 10), ...Array.from({ length: 40 }, (_, i) => 3500 + i * 10), 4200];
    const t = schedulerPerfThroughput(times, 0);
    // tick1: start (10). tick2: 0 new → skipped. tick3: 0 new → skipped. tick4: 40 new over 3 s → 13.33 recorded 3×.
    expect(t?.samples).toBe(3);
    expect(t?.average).toBeCloseTo(40 / 3, 6);
  });

  it('is undefined when everything happens within one sample', () => {
    expect(schedulerPerfThroughput([10, 20, 30], 0)).toBeUndefined();
    expect(schedulerPerfThroughput([], 0)).toBeUndefined();
  });

  it('does not depend on the order of the input', () => {
    const times = Array.from({ length: 500 }, (_, i) => 500 + i * 10);
    expect(schedulerPerfThroughput([...times].reverse(), 0)).toEqual(schedulerPerfThroughput(times, 0));
  });
});

describe('rates and percentiles', () => {
  it('nearest rank as scheduler_perf: sorted[ceil(n·p/100) − 1]', () => {
    const s = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
    expect(nearestRank(s, 50)).toBe(5);
    expect(nearestRank(s, 90)).toBe(9);
    expect(nearestRank(s, 99)).toBe(10);
    expect(nearestRank(s, 100)).toBe(10);
    expect(nearestRank([], 50)).toBeNaN();
  });
  it('rate is count per second of the window', () => {
    expect(rate(1000, 0, 4000)).toBe(250);
    expect(rate(10, 5, 5)).toBeNaN();
  });
  it('perSecond buckets by whole seconds since the start', () => {
    expect(perSecond([100, 900, 1000, 2500], 0)).toEqual([2, 1, 1]);
  });
});

describe('/proc/<pid>/stat', () => {
  it('reads utime and stime after a comm with spaces and parentheses', () => {
    const line = '1234 (kube (api) server) S 1 1234 1234 0 -1 4194560 5000 0 0 0 731 142 0 0 20 0 12 0 100 0 0';
    expect(parseProcStat(line)).toEqual({ utime: 731, stime: 142 });
  });
  it('rejects what is not a stat line', () => {
    expect(() => parseProcStat('garbage')).toThrow();
  });
});

describe('Prometheus text', () => {
  // As kube-apiserver and kube-scheduler write it (HELP, TYPE, complete histograms): the parser is strict.
  const before = promSamples(`# HELP apiserver_request_duration_seconds [STABLE] Response latency distribution in seconds.
# TYPE apiserver_request_duration_seconds histogram
apiserver_request_duration_seconds_bucket{verb="POST",resource="pods",subresource="binding",le="0.1"} 10
apiserver_request_duration_seconds_bucket{verb="POST",resource="pods",subresource="binding",le="0.2"} 10
apiserver_request_duration_seconds_bucket{verb="POST",resource="pods",subresource="binding",le="+Inf"} 10
apiserver_request_duration_seconds_sum{verb="POST",resource="pods",subresource="binding"} 0.5
apiserver_request_duration_seconds_count{verb="POST",resource="pods",subresource="binding"} 10
`);
  const after = promSamples(`# HELP apiserver_request_duration_seconds [STABLE] Response latency distribution in seconds.
# TYPE apiserver_request_duration_seconds histogram
apiserver_request_duration_seconds_bucket{verb="POST",resource="pods",subresource="binding",le="0.1"} 60
apiserver_request_duration_seconds_bucket{verb="POST",resource="pods",subresource="binding",le="0.2"} 110
apiserver_request_duration_seconds_bucket{verb="POST",resource="pods",subresource="binding",le="+Inf"} 110
apiserver_request_duration_seconds_sum{verb="POST",resource="pods",subresource="binding"} 10.5
apiserver_request_duration_seconds_count{verb="POST",resource="pods",subresource="binding"} 110
apiserver_request_duration_seconds_bucket{verb="POST",resource="pods",subresource="",le="0.1"} 7
apiserver_request_duration_seconds_bucket{verb="POST",resource="pods",subresource="",le="0.2"} 7
apiserver_request_duration_seconds_bucket{verb="POST",resource="pods",subresource="",le="+Inf"} 7
apiserver_request_duration_seconds_sum{verb="POST",resource="pods",subresource=""} 0.07
apiserver_request_duration_seconds_count{verb="POST",resource="pods",subresource=""} 7
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="201",host="127.0.0.1:6443",method="POST"} 3e+03
# TYPE weird_label gauge
weird_label{msg="a \\"quoted\\" value"} 1
`);
  it('parses names, labels (with escapes) and values', () => {
    expect(promSum(after, 'rest_client_requests_total')).toBe(3000);
    expect(after.find((s) => s.name === 'weird_label')?.labels.msg).toBe('a "quoted" value');
  });
  it('histogram deltas between scrapes, filtered by labels', () => {
    const d = histogramDelta(before, after, 'apiserver_request_duration_seconds', { subresource: 'binding' });
    expect(d.count).toBe(100);
    expect(d.sumSeconds).toBeCloseTo(10, 9);
    expect(d.meanMs).toBeCloseTo(100, 6);
    expect(histogramDelta([], after, 'apiserver_request_duration_seconds', { subresource: '' }).count).toBe(7);
    expect(histogramDelta(before, after, 'nope').meanMs).toBeNaN();
  });
  it('histogram quantiles interpolate inside the bucket', () => {
    // 50 observations ≤ 0.1, 50 in (0.1, 0.2]: the median is 0.1, p99 is 0.198.
    expect(histogramQuantile(before, after, 'apiserver_request_duration_seconds', 0.5, { subresource: 'binding' })).toBeCloseTo(0.1, 9);
    expect(histogramQuantile(before, after, 'apiserver_request_duration_seconds', 0.99, { subresource: 'binding' })).toBeCloseTo(0.198, 9);
  });
});

describe('kube-scheduler config', () => {
  it('sets client QPS and burst and turns leader election off', () => {
    const cfg = parseYaml(kubeSchedulerConfigYaml(5000, 6000)) as { kind: string; clientConnection: { qps: number; burst: number }; leaderElection: { leaderElect: boolean } };
    expect(cfg.kind).toBe('KubeSchedulerConfiguration');
    expect(cfg.clientConnection).toEqual({ qps: 5000, burst: 6000 });
    expect(cfg.leaderElection.leaderElect).toBe(false);
  });
});

describe('boundVerdict', () => {
  const base = { windowSeconds: 10, cores: 2, scheduler: 'sits', schedulerSingleThreaded: true };
  it('a saturated event loop is the bound', () => {
    expect(boundVerdict({ ...base, eventLoopUtilization: 0.95, shares: [{ name: 'sits', cpuSeconds: 9.5 }] })).toMatch(/scheduler's single event loop/);
  });
  it('a full machine is the bound', () => {
    expect(boundVerdict({ ...base, shares: [{ name: 'kube-apiserver', cpuSeconds: 12 }, { name: 'sits', cpuSeconds: 3 }, { name: 'other', cpuSeconds: 5 }] })).toMatch(/machine CPU.*0.50 of them taken by processes outside.*largest user: kube-apiserver/);
  });
  it('otherwise it waited on the API server', () => {
    expect(boundVerdict({ ...base, shares: [{ name: 'kube-apiserver', cpuSeconds: 5 }, { name: 'sits', cpuSeconds: 2 }] })).toMatch(/not CPU-bound/);
  });
});
