import type { Command } from 'commander';
import { NODE_SHAPES } from '../../core/model/presets.ts';
import { PROFILES } from '../../core/framework/registry.ts';
import { table } from '../format.ts';

export function registerInfo(program: Command): void {
  program
    .command('presets')
    .description('list the node shape presets (GPU model, count, in-node links)')
    .action(() => {
      const rows = Object.values(NODE_SHAPES).map((s) => [s.id, s.gpus.length, s.gpus[0]?.model ?? '', s.cpuMilli / 1000, Math.round(s.memoryMiB / 1024), s.description]);
      process.stdout.write(`${table(['id', 'gpus', 'model', 'cpu', 'mem GiB', 'description'], rows)}\n`);
    });
  program
    .command('profiles')
    .description('list the scheduling profiles')
    .action(() => {
      const rows = Object.values(PROFILES).map((p) => [p.name, p.scorers.map((s) => `${s.name}×${s.weight}`).join('+') || `(${p.selector})`, p.devicePicker, p.gangSearch, p.description]);
      process.stdout.write(`${table(['profile', 'scoring', 'GPU choice', 'gangs', 'description'], rows)}\n`);
    });
}
