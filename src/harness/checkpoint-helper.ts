/**
 * The training side of the checkpoint contract in e2e tests (docs/checkpoints.md): examples/sits_checkpoint.py run
 * as rank 0's container would run it, and the `trainer` service account whose token it uses (the contract's Role:
 * get and patch pods). One copy for every test that plays the workload.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { V1Pod } from '@kubernetes/client-node';
import type { KubeClient } from '../kube/client/client.ts';

const run = promisify(execFile);
export const CHECKPOINT_HELPER = join(resolve(dirname(fileURLToPath(import.meta.url)), '../..'), 'examples/sits_checkpoint.py');

/** The control plane the helper talks to: its URL and the folder holding `pki/apiserver.crt`. */
export interface HelperPlane {
  readonly server: string;
  readonly dir: string;
}

const envOf = (p: V1Pod): Record<string, string> => Object.fromEntries((p.spec?.containers[0]?.env ?? []).map((e) => [e.name, e.value ?? '']));

/** Runs the Python helper as `pod` would (what the downward API gives the container, the token in `tokenFile`). */
export async function runCheckpointHelper(
  plane: HelperPlane,
  pod: V1Pod,
  tokenFile: string,
  args: readonly string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  return runPython(plane, pod, tokenFile, [CHECKPOINT_HELPER, ...args]);
}

/**
 * Rank 0 of `pod` saves checkpoint `step` of cycle `seq` inside `sits_checkpoint.saving()` (the helper's library API)
 * onto a full volume: the write goes to /dev/full, so write(2) really fails with ENOSPC. Prints what saving() reported.
 */
export async function saveOnFullVolume(
  plane: HelperPlane,
  pod: V1Pod,
  tokenFile: string,
  step: number,
  seq: number,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const code = [
    'import sits_checkpoint',
    `with sits_checkpoint.saving(${step}, seq=${seq}, shards=1, rank=0) as s:`,
    "    with open('/dev/full', 'wb') as f:",
    `        f.write(b'weights of step ${step}' * 4096)`,
    'print(s.error)',
  ].join('\n');
  return runPython(plane, pod, tokenFile, ['-c', code], { PYTHONPATH: dirname(CHECKPOINT_HELPER), PYTHONDONTWRITEBYTECODE: '1' });
}

async function runPython(
  plane: HelperPlane,
  pod: V1Pod,
  tokenFile: string,
  args: readonly string[],
  extra: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await run('python3', args, {
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        SITS_KUBE_API: plane.server,
        SITS_KUBE_TOKEN_FILE: tokenFile,
        SITS_KUBE_CA_FILE: join(plane.dir, 'pki', 'apiserver.crt'),
        SITS_POD_NAME: pod.metadata?.name ?? '',
        SITS_POD_NAMESPACE: pod.metadata?.namespace ?? '',
        SITS_CHECKPOINT_DIR: envOf(pod).SITS_CHECKPOINT_DIR ?? '',
        ...extra,
      },
    });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e) {
    const x = e as { code?: number; stdout?: string; stderr?: string };
    return { code: x.code ?? -1, stdout: x.stdout ?? '', stderr: x.stderr ?? '' };
  }
}

/** A service account `trainer` in `ns` bound to the contract's Role (get, patch pods); returns its token's file. */
export async function trainerTokenFile(client: KubeClient, plane: HelperPlane, ns: string): Promise<string> {
  await client.post(`/api/v1/namespaces/${ns}/serviceaccounts`, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'trainer' } });
  await client.post(`/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/roles`, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: { name: 'sits-checkpoint' },
    rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'patch'] }],
  });
  await client.post(`/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings`, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: 'trainer-checkpoint' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'sits-checkpoint' },
    subjects: [{ kind: 'ServiceAccount', name: 'trainer', namespace: ns }],
  });
  const tr = await client.post<{ status: { token: string } }>(`/api/v1/namespaces/${ns}/serviceaccounts/trainer/token`, {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    spec: { expirationSeconds: 3600 },
  });
  const dir = join(plane.dir, `sa-${ns}`);
  mkdirSync(dir, { recursive: true });
  const tokenFile = join(dir, 'token');
  writeFileSync(tokenFile, tr.status.token, { mode: 0o600 });
  return tokenFile;
}
