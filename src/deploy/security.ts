// Security contexts shared by SITS's own Deployments (tested in deploy.test.ts against Pod Security "restricted").

/** Pod Security "restricted" for SITS's own pods (the namespace enforces it): non-root, no privilege, RuntimeDefault seccomp. */
export const RESTRICTED_POD = { runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, fsGroup: 65532, seccompProfile: { type: 'RuntimeDefault' } } as const;
export const RESTRICTED_CONTAINER = {
  allowPrivilegeEscalation: false,
  privileged: false,
  readOnlyRootFilesystem: true,
  runAsNonRoot: true,
  capabilities: { drop: ['ALL'] },
  seccompProfile: { type: 'RuntimeDefault' },
} as const;
