/**
 * A client that acts as a ServiceAccount bound to exactly the given rules (a ClusterRole + ClusterRoleBinding, or
 * a Role + RoleBinding in its namespace), for e2e tests that check a component works with the RBAC it ships.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { loadKubeConfig } from '../app/live.ts';
import { KubeClient, isStatus } from '../kube/client/client.ts';
import type { PolicyRule } from '../deploy/rbac.ts';

export interface AccountOptions {
  readonly namespace: string;
  readonly name: string;
  readonly rules: readonly PolicyRule[];
  /** Role + RoleBinding in `namespace` instead of cluster-wide. */
  readonly namespaced?: boolean;
}

export interface Account {
  readonly token: string;
  readonly client: KubeClient;
  readonly user: string;
}

const RBAC = '/apis/rbac.authorization.k8s.io/v1';

/** Creates the account, its role and binding (409s ignored: idempotent), and a client with its token. */
export async function serviceAccountClient(admin: KubeClient, plane: { readonly dir: string; readonly server: string }, o: AccountOptions): Promise<Account> {
  const ok409 = (e: unknown): void => {
    if (!isStatus(e, 409)) throw e;
  };
  await admin.post(`/api/v1/namespaces/${o.namespace}/serviceaccounts`, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: o.name } }).catch(ok409);
  const roleName = `${o.namespace}-${o.name}`;
  const rules = o.rules.map((r) => ({
    apiGroups: [...r.apiGroups],
    resources: [...r.resources],
    ...(r.resourceNames === undefined ? {} : { resourceNames: [...r.resourceNames] }),
    verbs: [...r.verbs],
  }));
  const subjects = [{ kind: 'ServiceAccount', name: o.name, namespace: o.namespace }];
  if (o.namespaced === true) {
    await admin
      .post(`${RBAC}/namespaces/${o.namespace}/roles`, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: roleName }, rules })
      .catch(ok409);
    await admin
      .post(`${RBAC}/namespaces/${o.namespace}/rolebindings`, {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: roleName },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: roleName },
        subjects,
      })
      .catch(ok409);
  } else {
    await admin
      .post(`${RBAC}/clusterroles`, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: roleName }, rules })
      .catch(ok409);
    await admin
      .post(`${RBAC}/clusterrolebindings`, {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name: roleName },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: roleName },
        subjects,
      })
      .catch(ok409);
  }
  const tr = await admin.post<{ status: { token: string } }>(`/api/v1/namespaces/${o.namespace}/serviceaccounts/${o.name}/token`, {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    spec: { expirationSeconds: 3600 },
  });
  const path = writeTokenKubeconfig(plane.dir, plane.server, roleName, o.name, tr.status.token);
  return { token: tr.status.token, client: new KubeClient(loadKubeConfig(path)), user: `system:serviceaccount:${o.namespace}:${o.name}` };
}

/** A kubeconfig at `<dir>/<file>.kubeconfig` that sends `token` as `user` to `server` (mode 0600); its path. */
export function writeTokenKubeconfig(dir: string, server: string, file: string, user: string, token: string): string {
  const path = join(dir, `${file}.kubeconfig`);
  writeFileSync(
    path,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: { server, 'insecure-skip-tls-verify': true } }],
      users: [{ name: user, user: { token } }],
      contexts: [{ name: 'c', context: { cluster: 'c', user } }],
      'current-context': 'c',
    }),
    { mode: 0o600 },
  );
  return path;
}
