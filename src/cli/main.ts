/** The `sits` command. Every subcommand has --help; errors go to stderr with a non-zero exit code. */
import { Command, CommanderError } from 'commander';
import { SITS_VERSION } from '../api/version.ts';
import { ExitStatus, reportError } from './errors.ts';

/**
 * Each command's module, loaded only when that command runs (or for the full help): `sits --version` and `sits
 * lint` do not load the scheduler, the live host or the benchmarks (ADR 0171). `names` are the commands the module
 * registers (cli.test.ts checks them against what it does register).
 */
export const COMMANDS: readonly { readonly names: readonly string[]; readonly load: () => Promise<(program: Command) => void> }[] = [
  { names: ['demo'], load: async () => (await import('./commands/demo.ts')).registerDemo },
  { names: ['schedule'], load: async () => (await import('./commands/schedule.ts')).registerSchedule },
  { names: ['scenario'], load: async () => (await import('./commands/scenario.ts')).registerScenario },
  { names: ['presets', 'profiles'], load: async () => (await import('./commands/info.ts')).registerInfo },
  { names: ['bench'], load: async () => (await import('./commands/bench.ts')).registerBench },
  { names: ['run'], load: async () => (await import('./commands/run.ts')).registerRun },
  { names: ['controllers'], load: async () => (await import('./commands/controllers.ts')).registerControllers },
  { names: ['dev'], load: async () => (await import('./commands/dev.ts')).registerDev },
  { names: ['explain'], load: async () => (await import('./commands/explain.ts')).registerExplain },
  { names: ['crds'], load: async () => (await import('./commands/crds.ts')).registerCrds },
  { names: ['deploy'], load: async () => (await import('./commands/deploy.ts')).registerDeploy },
  { names: ['webhook'], load: async () => (await import('./commands/webhook.ts')).registerWebhook },
  { names: ['node-agent'], load: async () => (await import('./commands/node-agent.ts')).registerNodeAgent },
  { names: ['lint'], load: async () => (await import('./commands/lint.ts')).registerLint },
  { names: ['extender'], load: async () => (await import('./commands/extender.ts')).registerExtender },
  { names: ['activator'], load: async () => (await import('./commands/activator.ts')).registerActivator },
  { names: ['top'], load: async () => (await import('./commands/top.ts')).registerTop },
  { names: ['conformance'], load: async () => (await import('./commands/conformance.ts')).registerConformance },
  { names: ['batch-worker'], load: async () => (await import('./commands/batch-worker.ts')).registerBatchWorker },
];

/** The release, as `sits --version` prints it. */
export const VERSION = SITS_VERSION;

/**
 * The program with the commands `argv` needs: the one it names, or every command (help, a mistyped name that
 * commander answers with suggestions); none for `--version` alone.
 */
export async function buildProgram(argv: readonly string[] = []): Promise<Command> {
  const program = new Command('sits')
    .description('SITS — Scalable Intelligent Task Scheduler: GPU-, topology- and fragmentation-aware scheduling for ML on Kubernetes')
    .version(VERSION)
    .option('--debug', 'on an error, also print its stack trace (errors are otherwise one line: sits: <what>: <why> (<what to do>))')
    // Commander's own messages go through reportError like every other error (one line); help and version still print.
    .configureOutput({ outputError: () => undefined })
    .exitOverride();
  const args = argv.slice(2);
  const first = args.find((a) => !a.startsWith('-'));
  const only = first === undefined ? undefined : COMMANDS.find((c) => c.names.includes(first));
  const versionOnly = first === undefined && args.length > 0 && args.every((a) => a === '--version' || a === '-V');
  const needed = versionOnly ? [] : only !== undefined ? [only] : COMMANDS;
  for (const register of await Promise.all(needed.map((c) => c.load()))) register(program);
  return program;
}

/** The subcommand path `argv` names (`bench fgd`), for the `--help` an error line points at. */
export function commandPath(program: Command, argv: readonly string[]): string {
  const names: string[] = [];
  let cmd = program;
  for (const a of argv.slice(2)) {
    if (a === '--') break;
    if (a.startsWith('-')) continue;
    const sub = cmd.commands.find((c) => c.name() === a || c.aliases().includes(a));
    if (sub === undefined) break;
    names.push(sub.name());
    cmd = sub;
  }
  return names.join(' ');
}

/** Whether --debug is among the options (before a `--`). */
function wantsDebug(argv: readonly string[]): boolean {
  const end = argv.indexOf('--');
  return (end === -1 ? argv : argv.slice(0, end)).includes('--debug');
}

/** Prints `e` as the CLI's one line (and its stack with --debug); returns the exit code. */
function fail(e: unknown, command: string, debug: boolean): number {
  const r = reportError(e, command);
  if (debug) process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.stderr.write(`${r.lines.join('\n')}\n`);
  return r.exitCode;
}

/** Runs the CLI; returns the exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  // `sits crds | head -1`: a reader that stops early ends the output, as for any Unix filter, not with a trace.
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (e: NodeJS.ErrnoException) => {
      if (e.code === 'EPIPE') process.exit(0);
      throw e;
    });
  }
  const debug = wantsDebug(argv);
  let command = '';
  // An error outside the command's promise (a socket's 'error' event, a timer) ends the same way, not with a trace.
  const fatal = (e: unknown): void => {
    process.exit(fail(e, command, debug));
  };
  process.on('uncaughtException', fatal);
  process.on('unhandledRejection', fatal);
  const program = await buildProgram(argv);
  command = commandPath(program, argv);
  try {
    await program.parseAsync([...argv]);
    return 0;
  } catch (e) {
    if (e instanceof CommanderError && e.exitCode === 0) return 0;
    // `sits` alone, `sits bench`: commander printed the help to stderr.
    if (e instanceof CommanderError && e.code === 'commander.help') return 2;
    if (e instanceof ExitStatus) return e.exitCode;
    return fail(e, command, debug);
  }
}
