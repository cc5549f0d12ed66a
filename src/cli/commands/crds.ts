import type { Command } from 'commander';
import { crdYaml } from '../../api/crd.ts';

/** `sits crds`: every SITS CRD (the workload kinds, Queue and PodGroup) as one YAML stream. */
export function registerCrds(program: Command): void {
  program
    .command('crds')
    .description('print the SITS CustomResourceDefinitions as YAML (sits crds | kubectl apply --server-side -f -)')
    .action(() => {
      process.stdout.write(crdYaml());
    });
}
