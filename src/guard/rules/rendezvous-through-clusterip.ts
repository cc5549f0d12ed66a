import { WORKLOAD_KINDS, envOf, field, flagValue, namespaceOf, podSites, str } from '../pod-specs.ts';
import type { FieldPath, Rule, RuleHit } from '../rule.ts';
import { findObject } from '../set-index.ts';

/** The Service a rendezvous host names (`svc`, `svc.ns`, `svc.ns.svc[.cluster.local]`, with an optional `:port`), or undefined. */
export function serviceOfHost(host: string, defaultNamespace: string): { readonly name: string; readonly namespace: string } | undefined {
  let h = host.replace(/^[a-z]+:\/\//, '');
  h = h.replace(/:\d+$/, '');
  if (h === '' || h.includes(':') || /^\d+\.\d+\.\d+\.\d+$/.test(h)) return undefined;
  const parts = h.split('.');
  const [name, ns, third] = parts;
  if (name === undefined || name === '') return undefined;
  if (parts.length === 1) return { name, namespace: defaultNamespace };
  if (ns !== undefined && (parts.length === 2 || third === 'svc')) return { name, namespace: ns };
  return undefined;
}

const ENV = ['MASTER_ADDR', 'PET_MASTER_ADDR', 'PET_RDZV_ENDPOINT'];
const FLAGS = ['--master-addr', '--rdzv-endpoint'];

export const rendezvousThroughClusterIp: Rule = {
  id: 'rendezvous-through-clusterip',
  severity: 'warning',
  seed: '001 §1',
  title: 'Rendezvous (MASTER_ADDR, --rdzv-endpoint) through a ClusterIP Service instead of a headless one',
  rationale:
    'When ranks reach the master through a ClusterIP Service, connections go through kube-proxy and the Endpoints object, which can lag pod ' +
    'starts by 15 s: NCCL and the c10d store time out while the job starts (seed 001 §1). Flagged when `MASTER_ADDR`, `PET_MASTER_ADDR`, ' +
    '`PET_RDZV_ENDPOINT`, `--master-addr` or `--rdzv-endpoint` names a Service of the same set (`svc`, `svc.ns`, `svc.ns.svc.cluster.local`) ' +
    'whose `clusterIP` is not `None`. Use a headless Service (`clusterIP: None`) and address rank 0 by its pod DNS name ' +
    '(`<pod>.<service>.<ns>.svc`), as a TrainingJob does by itself.',
  kinds: WORKLOAD_KINDS,
  fixtures: {
    bad: `apiVersion: v1
kind: Service
metadata: {name: bert-master, namespace: ml}
spec:
  selector: {app: bert, rank: "0"}
  ports: [{port: 29500}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: bert, namespace: ml}
spec:
  selector: {matchLabels: {app: bert}}
  replicas: 4
  template:
    metadata: {labels: {app: bert}}
    spec:
      containers:
      - name: t
        image: pytorch/pytorch:2.3
        command: [torchrun, --nnodes=4, --rdzv-endpoint=bert-master.ml.svc.cluster.local:29500, train.py]
        env: [{name: MASTER_ADDR, value: bert-master}]
`,
    good: `apiVersion: v1
kind: Service
metadata: {name: bert, namespace: ml}
spec:
  clusterIP: None
  selector: {app: bert}
  ports: [{port: 29500}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: bert, namespace: ml}
spec:
  selector: {matchLabels: {app: bert}}
  replicas: 4
  serviceName: bert
  template:
    metadata: {labels: {app: bert}}
    spec:
      containers:
      - name: t
        image: pytorch/pytorch:2.3
        command: [torchrun, --nnodes=4, --rdzv-endpoint=bert-0.bert.ml.svc:29500, train.py]
        env: [{name: MASTER_ADDR, value: bert}]
        volumeMounts: [{name: dshm, mountPath: /dev/shm}]
      volumes: [{name: dshm, emptyDir: {medium: Memory}}]
`,
  },
  check(obj, ctx) {
    const hits: RuleHit[] = [];
    const ns = namespaceOf(obj);
    const judge = (host: string, what: string, path: FieldPath): void => {
      const ref = serviceOfHost(host, ns);
      if (ref === undefined) return;
      const svc = findObject(ctx, 'Service', ref.namespace, ref.name);
      if (svc === undefined) return;
      const ip = str(field(svc.spec, 'clusterIP'));
      if (ip === 'None' || str(field(svc.spec, 'type')) === 'ExternalName') return;
      hits.push({
        message: `${what} ${host} goes through Service ${ref.namespace}/${ref.name}, which has a cluster IP: kube-proxy and Endpoints lag pod starts by up to 15 s and NCCL/c10d connections time out; make the Service headless (clusterIP: None) and address rank 0 by its pod DNS name (<pod>.<service>.<namespace>.svc)`,
        path,
      });
    };
    for (const s of podSites(obj)) {
      for (const c of s.containers) {
        const env = envOf(c);
        for (const name of ENV) {
          const e = env.get(name);
          if (e?.value !== undefined) judge(e.value, name, e.valuePath);
        }
        for (const f of FLAGS) {
          const v = flagValue(c, [f]);
          if (v !== undefined) judge(v.text, f, v.path);
        }
      }
    }
    return hits;
  },
};
