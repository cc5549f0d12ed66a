import type { Command } from 'commander';
import { parse as parseYaml } from 'yaml';
import { crdFiles } from '../../api/crd.ts';
import { deployFiles } from '../../deploy/bundle.ts';
import { DEFAULT_NAMESPACE } from '../../deploy/tree.ts';
import { resolveValues } from '../../deploy/values.ts';
import { syncDeployFiles } from '../../deploy/write.ts';
import { CliError } from '../errors.ts';
import { prepareOutputDir, readInput } from '../paths.ts';

/** `sits deploy --out DIR [--values FILE]`: the manifests of deploy/ (CRDs, sits.yaml, rbac.yaml, Helm chart) for these values. */
export function registerDeploy(program: Command): void {
  program
    .command('deploy')
    .description('write the deployment manifests to a folder: crds/, sits.yaml (all-in-one), rbac.yaml and the Helm chart helm/sits/')
    .requiredOption('--out <dir>', 'folder to write (created if missing; files of the same name are replaced)')
    .option('--values <file>', 'YAML overriding the default values (the keys of helm/sits/values.yaml)')
    .option('--namespace <ns>', "namespace of sits.yaml and rbac.yaml (the chart takes Helm's: helm install -n NS)", DEFAULT_NAMESPACE)
    .action((o: { out: string; values?: string; namespace: string }) => {
      if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(o.namespace))
        throw new CliError(`--namespace: "${o.namespace}" is not a namespace name`, { hint: 'a DNS label: lower-case letters, digits and -, at most 63' });
      let overrides: unknown = {};
      if (o.values !== undefined) {
        const text = readInput(o.values, 'values', '--values');
        try {
          overrides = parseYaml(text) ?? {};
        } catch (e) {
          throw new CliError(`--values ${o.values}: not YAML: ${((e as Error).message.split('\n')[0] ?? '').trim()}`, { hint: 'fix the file' });
        }
      }
      const values = resolveValues(overrides, o.namespace);
      if (!values.ok) throw new CliError(`--values ${o.values ?? ''}: ${values.errors.join('; ')}`, { hint: 'the keys and types of helm/sits/values.yaml' });
      // Checked and created before anything is generated; one level at a time (a recursive mkdir spins under /proc).
      const out = prepareOutputDir('--out', o.out);
      const files = [...crdFiles().map((f) => ({ path: `crds/${f.fileName}`, content: f.content })), ...deployFiles(values.value, o.namespace)];
      const r = syncDeployFiles(out, { files });
      process.stdout.write(
        `wrote ${r.changed.length} of ${r.total} files to ${out} (crds/, sits.yaml, rbac.yaml, helm/sits/)${r.stale.length > 0 ? `; removed ${r.stale.length} stale chart files` : ''}\n`,
      );
    });
}
