#!/usr/bin/env node
// Makes sure the upstream Kubernetes e2e suite binary (e2e.test, the package k8s.io/kubernetes/test/e2e built
// with `go test -c`) exists and prints the folder holding it on the last line of stdout
// (~/.cache/sits-k8s/<k8s version>-e2e/; built like the control plane, see kube-binary.mjs). The suite compares
// its own version with the server's in places, so it is stamped like the control plane's binaries.
// Used by `npm run conformance` and the conformance e2e test (docs/conformance.md, ADR 0073).
// Environment: SITS_E2E_BIN (a folder that must hold e2e.test; no build), XDG_CACHE_HOME, SITS_K8S_BUILD_JOBS.
// Plain Node ESM, no dependencies.

import { spawnSync } from 'node:child_process';
import { ensureKubeBinary } from './kube-binary.mjs';

await ensureKubeBinary({
  tag: 'sits-e2e',
  envName: 'SITS_E2E_BIN',
  binary: 'e2e.test',
  suffix: 'e2e',
  what: 'the upstream e2e suite (e2e.test)',
  pkg: 'k8s.io/kubernetes/test/e2e',
  testBinary: true,
  // The binary lists the scheduling cases without a cluster.
  check(path) {
    const r = spawnSync(path, ['--ginkgo.dry-run', '--ginkgo.focus=SchedulerPredicates', '--ginkgo.no-color', '--provider=skeleton'], {
      encoding: 'utf8',
      timeout: 120_000,
    });
    const out = `${r.stdout ?? ''}${r.stderr ?? ''}`;
    if (!/Ran [1-9]\d* of \d+ Specs/.test(out))
      throw new Error(`e2e.test --ginkgo.dry-run did not list the SchedulerPredicates cases: ${out.trim().slice(-2000) || r.error?.message}`);
  },
});
