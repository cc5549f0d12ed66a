import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { parse as parseYaml } from 'yaml';
import { crdFiles } from '../../api/crd.ts';
import { deployFiles } from '../../deploy/bundle.ts';
import { DEFAULT_NAMESPACE } from '../../deploy/tree.ts';
import { resolveValues } from '../../deploy/values.ts';
import { syncDeployFiles } from '../../deploy/write.ts';
import { CliError } from '../errors.ts';

/** `sits deploy --out DIR [--values FILE]`: the manifests of deploy/ (CRDs, sits.yaml, rbac.yaml, Helm chart) for these values. */
export function registerDeploy(program: Command): void {
  program
    .command('deploy')
    .description('write the deployment manifests to a folder: crds/, sits.yaml (all-in-one), rbac.yaml and the Helm chart helm/sits/')
    .requiredOption('--out <dir>', 'folder to write (created if missing; files of the same name are replaced)')
    .option('--values <file>', 'YAML overriding the default values (the keys of helm/sits/values.yaml)')
    .option('--namespace <ns>', 'namespace of sits.yaml and rbac.yaml (the chart takes Helm\'s: helm install -n NS)', DEFAULT_NAMESPACE)
    .action((o: { out: string; values?: string; namespace: string }) => {
      if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(o.namespace)) throw new CliError(`--namespace: "${o.namespace}" is not a DNS label`);
      let overrides: unknown = {};
      if (o.values !== undefined) {
        let text: string;
        try {
          text = readFileSync(o.values, 'utf8');
        } catch (e) {
          throw new CliError(`cannot read ${o.values}: ${(e as Error).message}`);
        }
        try {
          overrides = parseYaml(text) ?? {};
        } catch (e) {
          throw new CliError(`${o.values}: ${(e as Error).message}`);
        }
      }
      const values = resolveValues(overrides, o.namespace);
      if (!values.ok) throw new CliError(`${o.values ?? 'values'}:\n  ${values.errors.join('\n  ')}`);
      const files = [...crdFiles().map((f) => ({ path: `crds/${f.fileName}`, content: f.content })), ...deployFiles(values.value, o.namespace)];
      const out = resolve(o.out);
      const r = syncDeployFiles(out, { files });
      process.stdout.write(`wrote ${r.changed.length} of ${r.total} files to ${out} (crds/, sits.yaml, rbac.yaml, helm/sits/)${r.stale.length > 0 ? `; removed ${r.stale.length} stale chart files` : ''}\n`);
    });
}
