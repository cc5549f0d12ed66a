/** The `sits` command. Every subcommand has --help; errors go to stderr with a non-zero exit code. */
import { Command, CommanderError } from 'commander';
import { InputError } from '../spec/yaml-source.ts';
import { CliError, ExitStatus } from './errors.ts';
import { registerDemo } from './commands/demo.ts';
import { registerSchedule } from './commands/schedule.ts';
import { registerInfo } from './commands/info.ts';
import { registerBench } from './commands/bench.ts';
import { registerScenario } from './commands/scenario.ts';
import { registerRun } from './commands/run.ts';
import { registerControllers } from './commands/controllers.ts';
import { registerDev } from './commands/dev.ts';
import { registerExplain } from './commands/explain.ts';
import { registerCrds } from './commands/crds.ts';
import { registerDeploy } from './commands/deploy.ts';
import { registerWebhook } from './commands/webhook.ts';
import { registerNodeAgent } from './commands/node-agent.ts';
import { registerLint } from './commands/lint.ts';
import { registerActivator } from './commands/activator.ts';
import { registerExtender } from './commands/extender.ts';
import { registerTop } from './commands/top.ts';
import { registerConformance } from './commands/conformance.ts';
import { registerBatchWorker } from './commands/batch-worker.ts';

export function buildProgram(): Command {
  const program = new Command('sits')
    .description('SITS — Scalable Intelligent Task Scheduler: GPU-, topology- and fragmentation-aware scheduling for ML on Kubernetes')
    .version('0.1.0')
    .showHelpAfterError()
    .exitOverride();
  registerDemo(program);
  registerSchedule(program);
  registerScenario(program);
  registerInfo(program);
  registerBench(program);
  registerRun(program);
  registerControllers(program);
  registerDev(program);
  registerExplain(program);
  registerCrds(program);
  registerDeploy(program);
  registerWebhook(program);
  registerNodeAgent(program);
  registerLint(program);
  registerExtender(program);
  registerActivator(program);
  registerTop(program);
  registerConformance(program);
  registerBatchWorker(program);
  return program;
}

/** Runs the CLI; returns the exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync([...argv]);
    return 0;
  } catch (e) {
    if (e instanceof CommanderError) return e.exitCode === 0 ? 0 : 2;
    if (e instanceof ExitStatus) return e.exitCode;
    if (e instanceof InputError || e instanceof CliError) {
      process.stderr.write(`sits: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
}
