import type { Command } from 'commander';
import { DEFAULT_CLUSTER, disabledRuleIds, type LintOptions } from '../../guard/engine.ts';
import { formatFindings, OUTPUT_FORMATS, type OutputFormat } from '../../guard/format.ts';
import { decodeText, exitCodeOf, INPUT_RULES, lintSources, readInputs, type RuleInfo } from '../../guard/lint-files.ts';
import type { Rule } from '../../guard/rule.ts';
import { RULES } from '../../guard/rules/index.ts';
import { CliError, ExitStatus } from '../errors.ts';

export interface LintFlags {
  readonly output: string;
  readonly disable: readonly string[];
  readonly gpuModels?: string;
  readonly rdma?: boolean;
  readonly schedulerName: readonly string[];
  readonly docsUrl?: string;
}

const collect = (v: string, prev: string[]): string[] => [...prev, v];
const splitList = (v: string): string[] =>
  v
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');

/** Flags → engine options; a bad flag is a CliError (exit 2) that says what is allowed. */
export function lintOptions(flags: LintFlags, rules: readonly Rule[]): { options: LintOptions; format: OutputFormat } {
  if (!(OUTPUT_FORMATS as readonly string[]).includes(flags.output)) throw new CliError(`--output must be ${OUTPUT_FORMATS.join(', ')}, got "${flags.output}"`);
  let disabled: Set<string>;
  try {
    disabled = disabledRuleIds(flags.disable, rules);
  } catch (e) {
    throw new CliError(`--disable: ${(e as Error).message}`);
  }
  const gpuModels = flags.gpuModels === undefined ? undefined : splitList(flags.gpuModels);
  if (gpuModels !== undefined && gpuModels.length === 0) throw new CliError('--gpu-models needs at least one GPU model, e.g. A100-SXM4-80GB,L4');
  const schedulerNames = flags.schedulerName.length === 0 ? DEFAULT_CLUSTER.schedulerNames : flags.schedulerName.flatMap(splitList);
  if (flags.docsUrl !== undefined && !URL.canParse(flags.docsUrl)) throw new CliError(`--docs-url must be an absolute URL, got "${flags.docsUrl}"`);
  return {
    format: flags.output as OutputFormat,
    options: {
      disabled,
      cluster: { schedulerNames, ...(gpuModels === undefined ? {} : { gpuModels }), ...(flags.rdma === true ? { rdma: true } : {}) },
    },
  };
}

/** Reads stdin up to `maxBytes`; beyond that it stops and reports the size it saw (an `input-too-large` finding). */
async function readStdin(maxBytes: number): Promise<{ text?: string; bytes: number; binary?: boolean }> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of process.stdin) {
    const b = chunk as Buffer;
    bytes += b.length;
    if (bytes > maxBytes) {
      process.stdin.destroy();
      return { bytes };
    }
    chunks.push(b);
  }
  const text = decodeText(Buffer.concat(chunks));
  return text === null ? { text: '', bytes, binary: true } : { text, bytes };
}

export function registerLint(program: Command): void {
  program
    .command('lint')
    .description(
      'check manifests (files, folders, - for stdin; plain YAML/JSON, helm template output, Lists, SITS CRs) for the known ML-on-Kubernetes mistakes; exit 1 on errors',
    )
    .argument('<paths...>', 'files, folders (their *.yaml, *.yml, *.json, recursively) or - for stdin')
    .option('-o, --output <format>', OUTPUT_FORMATS.join(' | '), 'text')
    .option(
      '--disable <ids>',
      'rule ids to switch off for this run, comma-separated (repeatable); per object: the lint.sits2026.dev/disable annotation',
      collect,
      [],
    )
    .option('--gpu-models <list>', 'GPU models on the cluster, comma-separated (more than one = a mixed cluster)')
    .option('--rdma', 'the cluster has RDMA (InfiniBand/RoCE) nodes')
    .option('--scheduler-name <name>', 'a scheduler name SITS serves (repeatable; default sits-scheduler)', collect, [])
    .option('--docs-url <url>', 'absolute base URL of this repository for SARIF helpUri (docs/rules.md#<id> is resolved against it)')
    .action(async (paths: string[], flags: LintFlags) => {
      const { options, format } = lintOptions(flags, RULES);
      const { sources, unreadable } = await readInputs(paths, readStdin);
      for (const u of unreadable) process.stderr.write(`sits: ${u.path}: ${u.message}\n`);
      const report = lintSources(sources, RULES, options);
      const infos: RuleInfo[] = [
        ...RULES.map((r) => ({ id: r.id, severity: r.severity, title: r.title, rationale: r.rationale, seed: r.seed })),
        ...INPUT_RULES,
      ];
      process.stdout.write(
        formatFindings(format, report.findings, report, infos, {
          version: program.version() ?? '0.0.0',
          ...(flags.docsUrl === undefined ? {} : { docsBase: flags.docsUrl }),
        }),
      );
      const code = unreadable.length > 0 ? 2 : exitCodeOf(report.findings);
      if (code !== 0) throw new ExitStatus(code);
    });
}
