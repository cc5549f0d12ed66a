// The counters of the control-plane measurement over a hand-written /metrics page in the apiserver's v1.36 labels.
import { describe, expect, it } from 'vitest';
import { promSamples } from '../core/prom-text.ts';
import { breakdownDelta, etcdWrites, jobWrites, requestBreakdown } from './batch-control-plane.ts';

const page = (podPatches: number, statusPatches: number, etcdUpdates: number): string =>
  [
    '# TYPE apiserver_request_total counter',
    `apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 2`,
    `apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="PATCH",version="v1"} ${podPatches}`,
    `apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="status",verb="PATCH",version="v1"} 40`,
    `apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="binding",verb="POST",version="v1"} 2`,
    `apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="GET",version="v1"} 500`,
    `apiserver_request_total{code="200",component="apiserver",dry_run="",group="ai.sits2026.dev",resource="batchinferencejobs",scope="resource",subresource="status",verb="PATCH",version="v1"} ${statusPatches}`,
    `apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="nodes",scope="resource",subresource="",verb="PATCH",version="v1"} 99`,
    '# TYPE etcd_requests_total counter',
    `etcd_requests_total{group="ai.sits2026.dev",operation="update",resource="batchinferencejobs"} ${etcdUpdates}`,
    `etcd_requests_total{group="ai.sits2026.dev",operation="get",resource="batchinferencejobs"} 70`,
    `etcd_requests_total{group="ai.sits2026.dev",operation="create",resource="batchinferencejobs"} 1`,
    `etcd_requests_total{group="",operation="update",resource="pods"} 50`,
    '',
  ].join('\n');

describe('control-plane counters', () => {
  it("counts the job parties' writes (job object, pods themselves), not the kubelet's, the scheduler's or reads", () => {
    const a = promSamples(page(10, 5, 4));
    const b = promSamples(page(16, 9, 7));
    expect(jobWrites(a)).toBe(2 + 10 + 5);
    expect(jobWrites(b) - jobWrites(a)).toBe(6 + 4);
  });
  it('counts etcd writes (create/update/delete) of one resource, not its reads', () => {
    const s = promSamples(page(0, 0, 4));
    expect(etcdWrites(s, 'batchinferencejobs')).toBe(5);
    expect(etcdWrites(s, 'pods')).toBe(50);
    expect(etcdWrites(s, 'nodes')).toBe(0);
  });
  it('breaks requests down by verb and subresource, keeping only what moved', () => {
    const d = breakdownDelta(requestBreakdown(promSamples(page(10, 5, 4))), requestBreakdown(promSamples(page(16, 9, 7))));
    expect(d).toEqual({ 'PATCH batchinferencejobs/status': 4, 'PATCH pods': 6 });
  });
});
