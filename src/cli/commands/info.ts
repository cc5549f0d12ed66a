import type { Command } from 'commander';
import { NODE_SHAPES } from '../../core/model/presets.ts';
import { PROFILES } from '../../core/plugins/registry.ts';
import { TABLE_WIDTH, table } from '../format.ts';
import { outputOption, printed } from '../kube-flags.ts';

const FORMATS = ['table', 'wide', 'json', 'yaml'] as const;

/** `sits presets` as printed: a table within 120 columns, the whole description with -o wide. */
export function renderPresets(output: string): string {
  const shapes = Object.values(NODE_SHAPES);
  const obj = printed(shapes, output);
  if (obj !== undefined) return obj;
  const wide = output === 'wide';
  const rows = shapes.map((s) => [
    s.id,
    s.gpus.length,
    s.gpus[0]?.model ?? '',
    s.cpuMilli / 1000,
    Math.round(s.memoryMiB / 1024),
    ...(wide ? [s.gpus[0]?.memoryMiB === undefined ? '' : Math.round(s.gpus[0].memoryMiB / 1024)] : []),
    s.description,
  ]);
  const head = ['id', 'gpus', 'model', 'cpu', 'mem GiB', ...(wide ? ['GPU mem GiB'] : []), 'description'];
  return `${table(head, rows, { left: [0, 2, head.length - 1], ...(wide ? {} : { maxWidth: TABLE_WIDTH }) })}\n`;
}

/** `sits profiles` as printed: name, GPU choice, gangs and description within 120 columns; -o wide adds the scoring. */
export function renderProfiles(output: string): string {
  const profiles = Object.values(PROFILES);
  const obj = printed(profiles, output);
  if (obj !== undefined) return obj;
  const scoring = (p: (typeof profiles)[number]): string => p.scorers.map((s) => `${s.name}×${s.weight}`).join('+') || `(${p.selector})`;
  if (output === 'wide')
    return `${table(
      ['profile', 'scoring', 'GPU choice', 'gangs', 'description'],
      profiles.map((p) => [p.name, scoring(p), p.devicePicker, p.gangSearch, p.description]),
      { left: [0, 1, 2, 3, 4] },
    )}\n`;
  return `${table(
    ['profile', 'GPU choice', 'gangs', 'description'],
    profiles.map((p) => [p.name, p.devicePicker, p.gangSearch, p.description]),
    { left: [0, 1, 2, 3], maxWidth: TABLE_WIDTH },
  )}\n`;
}

export function registerInfo(program: Command): void {
  program
    .command('presets')
    .description('list the node shape presets (GPU model, count, in-node links)')
    .addOption(outputOption(FORMATS, 'wide: whole descriptions and GPU memory; json/yaml: the whole shapes'))
    .action((o: { output: string }) => {
      process.stdout.write(renderPresets(o.output));
    });
  program
    .command('profiles')
    .description('list the scheduling profiles')
    .addOption(outputOption(FORMATS, 'wide: the scorers and their weights, whole descriptions'))
    .action((o: { output: string }) => {
      process.stdout.write(renderProfiles(o.output));
    });
}
