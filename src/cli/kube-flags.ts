/**
 * kubectl's habits shared by the commands that read a cluster or print objects: `--kubeconfig`, `--context`,
 * `-n/--namespace` (default: the context's namespace, then `default`) and `-o json|yaml|wide` (issue 31).
 */
import { Option, type Command } from 'commander';
import { stringify } from 'yaml';
import { CliError } from './errors.ts';

export interface KubeFlags {
  readonly kubeconfig?: string;
  readonly context?: string;
  readonly namespace?: string;
}

/** Adds --kubeconfig, --context and -n/--namespace to `cmd`. */
export function kubeFlags(cmd: Command, what = 'credentials and apiserver'): Command {
  return cmd
    .option('--kubeconfig <file>', `kubeconfig for the ${what} (default: in-cluster, else $KUBECONFIG or ~/.kube/config)`)
    .option('--context <name>', 'kubeconfig context to use instead of the current one')
    .option('-n, --namespace <ns>', "namespace (default: the context's namespace, else default)");
}

/** `-o, --output <format>` limited to `formats`, the first being the default. */
export function outputOption(formats: readonly string[], note = ''): Option {
  return new Option('-o, --output <format>', note === '' ? 'output format' : `output format (${note})`).choices([...formats]).default(formats[0]);
}

/** `-o json|yaml` of a value, as kubectl prints objects; undefined for the table formats. */
export function printed(value: unknown, format: string): string | undefined {
  if (format === 'json') return `${JSON.stringify(value, null, 2)}\n`;
  // No &anchors for objects shared between entries: every entry reads whole, as kubectl prints them.
  if (format === 'yaml') return stringify(value, { aliasDuplicateObjects: false });
  return undefined;
}

/** `NS/NAME`, or `NAME` in `-n NS` (else the context's namespace): kubectl takes both. */
export function namespacedName(target: string, namespace: string | undefined, contextNamespace: () => string): string {
  const parts = target.split('/');
  if (parts.length === 2 && parts[0] !== '' && parts[1] !== '') {
    if (namespace !== undefined && namespace !== parts[0])
      throw new CliError(`<target>: "${target}" names namespace ${parts[0]} but -n says ${namespace}`, { hint: 'give one of them' });
    return target;
  }
  if (parts.length !== 1 || target === '')
    throw new CliError(`<target>: must be NAME or namespace/name, got "${target}"`, {
      hint: 'e.g. sits explain train-0 -n default, or sits explain default/train-0',
    });
  return `${namespace ?? contextNamespace()}/${target}`;
}
