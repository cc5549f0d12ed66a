#!/usr/bin/env node
// Makes sure kubectl exists and prints the folder holding it on the last line of stdout
// (~/.cache/sits-k8s/<k8s version>-kubectl/; built like the control plane, see kube-binary.mjs).
// Environment: SITS_KUBECTL_BIN (a folder that must hold kubectl; no build), XDG_CACHE_HOME,
// SITS_K8S_BUILD_JOBS. Plain Node ESM, no dependencies.

import { spawnSync } from 'node:child_process';
import { ensureKubeBinary } from './kube-binary.mjs';

await ensureKubeBinary({
  tag: 'sits-kubectl',
  envName: 'SITS_KUBECTL_BIN',
  binary: 'kubectl',
  suffix: 'kubectl',
  what: 'kubectl',
  pkg: 'k8s.io/kubernetes/cmd/kubectl',
  check(path, version) {
    const r = spawnSync(path, ['version', '--client'], { encoding: 'utf8' });
    const out = `${r.stdout ?? ''}${r.stderr ?? ''}`;
    if (r.status !== 0 || !out.includes(version)) throw new Error(`kubectl version --client did not report ${version}: ${out.trim() || r.error?.message}`);
  },
});
