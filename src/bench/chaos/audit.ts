/**
 * What the bench reads from kube-apiserver itself: the audit log (its policy and parser: pods/binding creates and the
 * scheduler Lease's writes) and the APF rejection counter of /metrics.
 */
import type { BindRecord, LeaseRecord } from './invariants.ts';

/** Lease writes with their body (the holder), bindings and pod deletions with metadata, nothing else. */
export const AUDIT_POLICY = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Request
  verbs: [create, update]
  namespaces: [kube-system]
  resources: [{group: coordination.k8s.io, resources: [leases]}]
- level: Metadata
  verbs: [create]
  resources: [{group: "", resources: [pods/binding]}]
- level: Metadata
  verbs: [delete]
  resources: [{group: "", resources: [pods]}]
- level: None
`;

interface AuditEvent {
  readonly stage?: string;
  readonly verb?: string;
  readonly user?: { readonly username?: string };
  readonly objectRef?: { readonly resource?: string; readonly subresource?: string; readonly namespace?: string; readonly name?: string };
  readonly responseStatus?: { readonly code?: number };
  readonly requestReceivedTimestamp?: string;
  readonly stageTimestamp?: string;
  readonly requestObject?: { readonly spec?: { readonly holderIdentity?: string } };
}

/** The bindings, pod deletions and scheduler-Lease writes in a kube-apiserver audit log (JSON lines). */
export function parseAudit(text: string, leaseName: string): { binds: BindRecord[]; deletes: BindRecord[]; leases: LeaseRecord[] } {
  const binds: BindRecord[] = [];
  const deletes: BindRecord[] = [];
  const leases: LeaseRecord[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    let e: AuditEvent;
    try {
      e = JSON.parse(line) as AuditEvent;
    } catch {
      continue; // a line cut by a SIGKILL
    }
    if (e.stage !== 'ResponseComplete') continue;
    const code = e.responseStatus?.code ?? 0;
    const user = e.user?.username ?? '';
    const ref = e.objectRef ?? {};
    if (ref.resource === 'pods' && ref.subresource === 'binding')
      binds.push({ receivedMs: Date.parse(e.requestReceivedTimestamp ?? ''), user, ns: ref.namespace ?? '', name: ref.name ?? '', code });
    else if (ref.resource === 'pods' && ref.subresource === undefined && e.verb === 'delete')
      deletes.push({ receivedMs: Date.parse(e.requestReceivedTimestamp ?? ''), user, ns: ref.namespace ?? '', name: ref.name ?? '', code });
    else if (ref.resource === 'leases' && ref.name === leaseName && code >= 200 && code < 300)
      leases.push({ storedMs: Date.parse(e.stageTimestamp ?? ''), user, holder: e.requestObject?.spec?.holderIdentity ?? '' });
  }
  return { binds, deletes, leases };
}

/** Sum of apiserver_flowcontrol_rejected_requests_total for our priority level in a /metrics text. */
export function rejectedFor(metrics: string, priorityLevel: string): number {
  let n = 0;
  for (const l of metrics.split('\n'))
    if (l.startsWith('apiserver_flowcontrol_rejected_requests_total{') && l.includes(`priority_level="${priorityLevel}"`)) n += Number(l.slice(l.lastIndexOf(' ') + 1));
  return n;
}

