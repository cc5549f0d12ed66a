import { describe, expect, it } from 'vitest';
import { parseAudit, rejectedFor } from './audit.ts';

const line = (o: Record<string, unknown>): string => JSON.stringify({ kind: 'Event', apiVersion: 'audit.k8s.io/v1', stage: 'ResponseComplete', ...o });

describe('chaos audit log and metrics', () => {
  it('reads bindings (any outcome) and successful writes of the named Lease, skipping other stages and cut lines', () => {
    const text = [
      line({
        user: { username: 'sits-replica-0' },
        objectRef: { resource: 'pods', subresource: 'binding', namespace: 'chaos', name: 'a' },
        responseStatus: { code: 201 },
        requestReceivedTimestamp: '2026-12-06T16:00:00.123456Z',
      }),
      line({ user: { username: 'sits-replica-1' }, objectRef: { resource: 'pods', subresource: 'binding', namespace: 'chaos', name: 'a' }, responseStatus: { code: 409 } }),
      line({
        user: { username: 'sits-replica-0' },
        objectRef: { resource: 'leases', namespace: 'kube-system', name: 'sits-scheduler' },
        responseStatus: { code: 200 },
        stageTimestamp: '2026-12-06T15:59:59.000001Z',
        requestObject: { spec: { holderIdentity: 'replica-0' } },
      }),
      line({ objectRef: { resource: 'leases', name: 'sits-scheduler' }, responseStatus: { code: 409 }, requestObject: { spec: { holderIdentity: 'replica-1' } } }),
      line({ objectRef: { resource: 'leases', name: 'other' }, responseStatus: { code: 200 }, requestObject: { spec: { holderIdentity: 'x' } } }),
      line({ verb: 'delete', user: { username: 'sits-replica-1' }, objectRef: { resource: 'pods', namespace: 'chaos', name: 'g-0' }, responseStatus: { code: 200 } }),
      line({ stage: 'ResponseStarted', objectRef: { resource: 'pods', subresource: 'binding', name: 'b' }, responseStatus: { code: 201 } }),
      '{"kind":"Event","stage":"ResponseCo',
    ].join('\n');
    const { binds, deletes, leases } = parseAudit(text, 'sits-scheduler');
    expect(deletes).toEqual([{ receivedMs: Number.NaN, user: 'sits-replica-1', ns: 'chaos', name: 'g-0', code: 200 }]);
    expect(binds).toEqual([
      { receivedMs: Date.parse('2026-12-06T16:00:00.123Z'), user: 'sits-replica-0', ns: 'chaos', name: 'a', code: 201 },
      { receivedMs: Number.NaN, user: 'sits-replica-1', ns: 'chaos', name: 'a', code: 409 },
    ]);
    expect(leases).toEqual([{ storedMs: Date.parse('2026-12-06T15:59:59.000Z'), user: 'sits-replica-0', holder: 'replica-0' }]);
  });

  it('sums the APF rejections of one priority level over its reasons', () => {
    const m = [
      '# TYPE apiserver_flowcontrol_rejected_requests_total counter',
      'apiserver_flowcontrol_rejected_requests_total{flow_schema="t",priority_level="t",reason="concurrency-limit"} 30',
      'apiserver_flowcontrol_rejected_requests_total{flow_schema="t",priority_level="t",reason="time-out"} 4',
      'apiserver_flowcontrol_rejected_requests_total{flow_schema="u",priority_level="u",reason="concurrency-limit"} 9',
    ].join('\n');
    expect(rejectedFor(m, 't')).toBe(34);
    expect(rejectedFor(m, 'v')).toBe(0);
  });
});
