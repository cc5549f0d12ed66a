#!/usr/bin/env node
// Makes sure kube-controller-manager exists and prints the folder holding it on the last line of stdout
// (~/.cache/sits-k8s/<k8s version>-controller-manager/; built like the control plane, see kube-binary.mjs).
// Environment: SITS_KCM_BIN (a folder that must hold kube-controller-manager; no build), XDG_CACHE_HOME,
// SITS_K8S_BUILD_JOBS. Plain Node ESM, no dependencies.

import { spawnSync } from 'node:child_process';
import { ensureKubeBinary } from './kube-binary.mjs';

await ensureKubeBinary({
  tag: 'sits-kcm',
  envName: 'SITS_KCM_BIN',
  binary: 'kube-controller-manager',
  suffix: 'controller-manager',
  what: 'kube-controller-manager',
  pkg: 'k8s.io/kubernetes/cmd/kube-controller-manager',
  check(path, version) {
    const r = spawnSync(path, ['--version'], { encoding: 'utf8' });
    const out = `${r.stdout ?? ''}${r.stderr ?? ''}`;
    if (r.status !== 0 || !out.includes(version))
      throw new Error(`kube-controller-manager --version did not report ${version}: ${out.trim() || r.error?.message}`);
  },
});
