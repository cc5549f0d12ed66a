/**
 * Finding and reading a kubeconfig as kubectl does ($KUBECONFIG, ~/.kube/config, in-cluster), with errors that say
 * which file, what is wrong and what to do. client-node's loadFromDefault falls back to http://localhost:8080 when
 * it finds nothing, which surfaced as "HTTP protocol is not allowed when skipTLSVerify is not set" (issue 31).
 */
import { readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';

const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

/** A kubeconfig that cannot be used: `message` is `<what>: <why>`, `hint` what to do (the CLI prints both on one line). */
export class KubeConfigError extends Error {
  readonly code = 'KubeConfig';
  readonly exitCode = 2;
  constructor(
    message: string,
    readonly hint: string,
  ) {
    super(message);
    this.name = 'KubeConfigError';
  }
}

export interface KubeConfigEnv {
  readonly KUBECONFIG?: string | undefined;
  readonly KUBERNETES_SERVICE_HOST?: string | undefined;
  readonly HOME?: string | undefined;
}

/** A loaded kubeconfig, with where it came from (for error messages that name the server's source). */
export interface ResolvedKubeConfig {
  readonly kc: KubeConfig;
  /** `kubeconfig /path`, `$KUBECONFIG /a:/b` or `in-cluster service account`. */
  readonly source: string;
  /** The current context's apiserver URL. */
  readonly server: string;
  /** The current context's namespace, else `default` (kubectl's default for -n). */
  readonly namespace: string;
  /** The context in use (--context, else the kubeconfig's current-context); '' for in-cluster. */
  readonly context: string;
}

/** What kubectl's global flags choose beside the file: `--context NAME`. */
export interface KubeConfigChoice {
  readonly context?: string | undefined;
}

function isFile(path: string): 'file' | 'folder' | 'missing' {
  try {
    return statSync(path).isDirectory() ? 'folder' : 'file';
  } catch {
    return 'missing';
  }
}

/** Text that YAML (or a person) could mean: no NUL byte, valid UTF-8. */
function looksBinary(buf: Buffer): boolean {
  if (buf.includes(0)) return true;
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(buf);
    return false;
  } catch {
    return true;
  }
}

function loadFile(kc: KubeConfig, path: string, label: string): void {
  const kind = isFile(path);
  if (kind === 'missing') throw new KubeConfigError(`${label} ${path}: no such file`, 'check the path, or pass --kubeconfig FILE');
  if (kind === 'folder') throw new KubeConfigError(`${label} ${path}: is a folder, not a file`, 'give the kubeconfig file itself');
  let buf: Buffer;
  try {
    buf = readFileSync(path);
  } catch (e) {
    throw new KubeConfigError(`${label} ${path}: cannot read: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`, "check the file's permissions");
  }
  if (looksBinary(buf))
    throw new KubeConfigError(
      `${label} ${path}: not a kubeconfig (binary data)`,
      'give a kubeconfig YAML file, e.g. the one `sits dev up` or your cloud CLI writes',
    );
  try {
    kc.loadFromFile(path);
  } catch (e) {
    const why = ((e as Error).message.split('\n')[0] ?? '').trim();
    throw new KubeConfigError(`${label} ${path}: not a valid kubeconfig: ${why}`, 'fix the file; kubectl config view shows what kubectl reads');
  }
}

/**
 * The kubeconfig at `path`; without one the in-cluster service account (when running in a pod and $KUBECONFIG is
 * unset), else $KUBECONFIG, else ~/.kube/config, else the service account. Never the localhost:8080 fallback.
 */
export function resolveKubeConfig(path?: string, env: KubeConfigEnv = process.env, choice: KubeConfigChoice = {}): ResolvedKubeConfig {
  const kc = new KubeConfig();
  let source: string;
  const home = env.HOME ?? homedir();
  const defaultFile = join(home, '.kube', 'config');
  const inCluster = env.KUBERNETES_SERVICE_HOST !== undefined && env.KUBERNETES_SERVICE_HOST !== '' && isFile(SERVICE_ACCOUNT_TOKEN) === 'file';
  const kubeconfigEnv = env.KUBECONFIG ?? '';
  if (path !== undefined) {
    loadFile(kc, path, '--kubeconfig');
    source = `--kubeconfig ${path}`;
  } else if (env.KUBERNETES_SERVICE_HOST !== undefined && env.KUBERNETES_SERVICE_HOST !== '' && kubeconfigEnv === '') {
    kc.loadFromCluster();
    source = 'in-cluster service account';
  } else if (kubeconfigEnv !== '') {
    const files = kubeconfigEnv.split(delimiter).filter((f) => f !== '');
    const present = files.filter((f) => isFile(f) !== 'missing');
    // kubectl skips missing files in the list; none at all is an error.
    if (present.length === 0)
      throw new KubeConfigError(`$KUBECONFIG ${kubeconfigEnv}: no such file`, 'check the path in KUBECONFIG, or pass --kubeconfig FILE');
    const [first = '', ...more] = present;
    loadFile(kc, first, '$KUBECONFIG');
    for (const f of more) {
      const other = new KubeConfig();
      loadFile(other, f, '$KUBECONFIG');
      kc.mergeConfig(other);
    }
    source = `$KUBECONFIG ${kubeconfigEnv}`;
  } else if (isFile(defaultFile) !== 'missing') {
    loadFile(kc, defaultFile, 'kubeconfig');
    source = `kubeconfig ${defaultFile}`;
  } else if (inCluster) {
    kc.loadFromCluster();
    source = 'in-cluster service account';
  } else {
    throw new KubeConfigError(
      `no kubeconfig found: looked at $KUBECONFIG (unset), ${defaultFile} (missing) and in-cluster (not in a pod)`,
      'pass --kubeconfig FILE or set KUBECONFIG; `sits dev up --kubeconfig FILE` starts a local cluster',
    );
  }
  if (choice.context !== undefined) {
    const known = kc.getContexts().map((c) => c.name);
    if (!known.includes(choice.context))
      throw new KubeConfigError(
        `--context: no context "${choice.context}" in ${source}`,
        known.length === 0 ? 'it has no contexts' : `known: ${known.join(', ')}`,
      );
    kc.setCurrentContext(choice.context);
  }
  const context = kc.getCurrentContext() as string | undefined;
  const cluster = kc.getCurrentCluster();
  if (kc.getClusters().length === 0)
    throw new KubeConfigError(
      `${source}: not a kubeconfig (no clusters in it)`,
      "give the kubeconfig your cluster's tools wrote; kubectl config view shows one",
    );
  if (cluster === null) {
    const what = context === undefined || context === '' ? 'no current-context' : `context "${context}" names no cluster`;
    throw new KubeConfigError(`${source}: ${what}`, 'set one with kubectl config use-context NAME');
  }
  let url: URL;
  try {
    url = new URL(cluster.server);
  } catch {
    throw new KubeConfigError(`${source}: cluster "${cluster.name}" server "${cluster.server}" is not a URL`, "write the apiserver's https://host:port");
  }
  // client-node refuses plain HTTP unless TLS checks are off; say so before a request fails deep inside it.
  if (url.protocol === 'http:' && cluster.skipTLSVerify !== true)
    throw new KubeConfigError(
      `${source}: cluster "${cluster.name}" server ${cluster.server} is plain HTTP`,
      "use the apiserver's https:// address, or set insecure-skip-tls-verify: true for a local test cluster",
    );
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new KubeConfigError(`${source}: cluster "${cluster.name}" server ${cluster.server} is not http(s)`, "write the apiserver's https://host:port");
  const inPod = source === 'in-cluster service account';
  const ns = inPod ? readServiceAccountNamespace() : (kc.getContextObject(context ?? '')?.namespace ?? '');
  return { kc, source, server: cluster.server, namespace: ns === '' ? 'default' : ns, context: inPod ? '' : (context ?? '') };
}

/** The pod's own namespace in-cluster (kubectl's default there too). */
function readServiceAccountNamespace(): string {
  try {
    return readFileSync(SERVICE_ACCOUNT_TOKEN.replace(/token$/, 'namespace'), 'utf8').trim();
  } catch {
    return '';
  }
}
