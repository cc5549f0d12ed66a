import { describe, expect, it } from 'vitest';
import { plainObjects } from './bundle.ts';
import { FORBIDDEN_RESOURCES, FORBIDDEN_VERBS } from './rbac.ts';
import type { Json } from './tree.ts';
import { resolveValues, type DeployValues } from './values.ts';

type Obj = { kind: string; metadata: { name: string; namespace?: string; labels?: Record<string, string> }; [k: string]: unknown };
const values = (over: Record<string, unknown>): DeployValues => {
  const r = resolveValues(over);
  if (!r.ok) throw new Error(r.errors.join('\n'));
  return r.value;
};
const ofKind = (list: readonly Json[], kind: string): Obj[] => list.filter((o) => (o as Obj).kind === kind) as Obj[];

describe('the node agent in the chart', () => {
  it('is off by default (it replaces NVIDIA’s device plugin): no DaemonSet, no extra RBAC', () => {
    const objs = plainObjects();
    expect(ofKind(objs, 'DaemonSet')).toEqual([]);
    expect(
      ofKind(objs, 'ClusterRole')
        .map((r) => r.metadata.name)
        .filter((n) => n.startsWith('sits-node')),
    ).toEqual([]);
  });

  it('enabled: its own privileged namespace, a ServiceAccount, least-privilege RBAC and the DaemonSet', () => {
    const objs = plainObjects(values({ nodeAgent: { enabled: true } }));
    const ns = ofKind(objs, 'Namespace').find((n) => n.metadata.name === 'sits-node');
    expect(ns?.metadata.labels?.['pod-security.kubernetes.io/enforce']).toBe('privileged');
    const role = ofKind(objs, 'ClusterRole').find((r) => r.metadata.name === 'sits-node-agent') as Obj & { rules: { resources: string[]; verbs: string[] }[] };
    expect(role.rules).toEqual([
      { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'patch'] },
      { apiGroups: [''], resources: ['pods'], verbs: ['list', 'patch'] },
      { apiGroups: [''], resources: ['nodes'], verbs: ['list', 'watch'] },
    ]);
    for (const rule of role.rules) {
      for (const r of rule.resources) expect(FORBIDDEN_RESOURCES).not.toContain(r);
      for (const v of rule.verbs) expect(FORBIDDEN_VERBS).not.toContain(v);
    }
    const binding = ofKind(objs, 'ClusterRoleBinding').find((b) => b.metadata.name === 'sits-node-agent');
    expect(binding?.subjects).toEqual([{ kind: 'ServiceAccount', name: 'sits-node-agent', namespace: 'sits-node' }]);
    const ds = ofKind(objs, 'DaemonSet')[0] as unknown as {
      metadata: { namespace: string };
      spec: {
        template: {
          spec: Record<string, unknown> & {
            containers: { args: string[]; env: { name: string }[]; securityContext: Record<string, unknown>; volumeMounts: { mountPath: string }[] }[];
            volumes: { hostPath?: { path: string } }[];
          };
        };
      };
    };
    expect(ds.metadata.namespace).toBe('sits-node');
    const pod = ds.spec.template.spec;
    const c = pod.containers[0];
    expect(c?.args).toEqual(['node-agent', '--interval=60', '--nvidia-smi=nvidia-smi', '--plugin-dir=/var/lib/kubelet/device-plugins']);
    expect(c?.env.map((e) => e.name)).toEqual(['NODE_NAME', 'NVIDIA_VISIBLE_DEVICES', 'NVIDIA_DRIVER_CAPABILITIES']);
    expect(c?.securityContext).toMatchObject({
      privileged: false,
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
    });
    // The only host path: the kubelet's device-plugin folder.
    expect(pod.volumes.flatMap((v) => (v.hostPath === undefined ? [] : [v.hostPath.path]))).toEqual(['/var/lib/kubelet/device-plugins']);
    expect(pod.runtimeClassName).toBe('nvidia');
  });

  it('labels only: no host path, no pod access', () => {
    const objs = plainObjects(values({ nodeAgent: { enabled: true, devicePlugin: false } }));
    const role = ofKind(objs, 'ClusterRole').find((r) => r.metadata.name === 'sits-node-agent') as Obj & { rules: { resources: string[] }[] };
    expect(role.rules.flatMap((r) => r.resources)).toEqual(['nodes']);
    const ds = ofKind(objs, 'DaemonSet')[0] as unknown as {
      spec: { template: { spec: { containers: { args: string[] }[]; volumes: { hostPath?: unknown }[] } } };
    };
    expect(ds.spec.template.spec.containers[0]?.args).toContain('--no-device-plugin');
    expect(ds.spec.template.spec.volumes.filter((v) => v.hostPath !== undefined)).toEqual([]);
  });

  it('may not share the scheduler’s namespace (Pod Security "restricted" there)', () => {
    const r = resolveValues({ nodeAgent: { enabled: true, namespace: 'gpu' } }, 'gpu');
    expect(r.ok ? '' : r.errors.join('\n')).toMatch(/values\.nodeAgent\.namespace: must differ/);
  });
});
