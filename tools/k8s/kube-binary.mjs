// One more binary built from the kube-apiserver's wrapper module (tools/k8s/kube: same k8s version, same
// staging pins), cached apart from the control plane so adding it never invalidates that cache:
//   ${XDG_CACHE_HOME:-~/.cache}/sits-k8s/<k8s version>-<suffix>/<binary>
// Used by ensure-controller-manager.mjs and ensure-e2e.mjs. Plain Node ESM, no dependencies.

import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cacheRoot, ensureGoBuild, isExecutableFile, kubeVersionLdflags, reporter, requiredVersion, useBinFolder } from '../lib/cached-build.mjs';

const KUBE_MOD_DIR = join(dirname(fileURLToPath(import.meta.url)), 'kube');

/**
 * Prints the folder holding `binary` on stdout's last line: `envName`'s folder if set (checked, no build), else
 * the cache folder, built with `go build` (or `go test -c` when `testBinary`) of `pkg` when missing, stamped
 * with the k8s version, and checked by `check(path, k8sVersion)` (throws) before it is put in place.
 */
export async function ensureKubeBinary({ tag, envName, binary, suffix, what, pkg, testBinary = false, check }) {
  const { log, fail } = reporter(tag);
  useBinFolder(envName, [binary], fail);
  const k8sVersion = requiredVersion(join(KUBE_MOD_DIR, 'go.mod'), 'k8s.io/kubernetes', fail);
  const key = `${k8sVersion}-${suffix}`;
  const root = cacheRoot('sits-k8s');
  const finalDir = join(root, key);
  await ensureGoBuild({
    log,
    fail,
    root,
    key,
    label: key,
    ready: () => isExecutableFile(join(finalDir, binary)),
    what,
    instead: `set ${envName} to a folder holding ${binary} (${pkg} ${k8sVersion})`,
    jobsEnv: 'SITS_K8S_BUILD_JOBS',
    doneMessage: (took) => `done in ${took}: ${finalDir}`,
    async build({ tmpDir, go, goVersion, startedAt }) {
      log(`${binary} ${k8sVersion} not found in ${finalDir}; building with ${goVersion}`);
      await go(
        `${binary} ${k8sVersion}`,
        KUBE_MOD_DIR,
        ['-o', join(tmpDir, binary), '-ldflags', kubeVersionLdflags(k8sVersion), pkg],
        testBinary ? { testBinary: true } : undefined,
      );
      check(join(tmpDir, binary), k8sVersion);
      writeFileSync(
        join(tmpDir, 'BUILD-INFO.json'),
        `${JSON.stringify({ kubernetes: k8sVersion, go: goVersion, builtAt: new Date().toISOString(), buildSeconds: Math.round((Date.now() - startedAt) / 1000) }, null, 2)}\n`,
      );
    },
  });
  process.stdout.write(`${finalDir}\n`);
}
