import type { Command } from 'commander';
import { runBatchWorker } from '../../live/batch/batch-worker.ts';
import { parseBatchPolicy } from '../../controllers/batch-inference/live-batch.ts';
import { parsePluginLimits } from '../../controllers/batch-inference/wasm-plugin.ts';
import { loadKubeConfig } from '../../app/live.ts';
import { KubeClient } from '../../kube/client/client.ts';
import { RUNTIMES, runtimeFor } from '../../serving/runtimes/index.ts';
import { CliError } from '../errors.ts';
import { intOption, numberOption } from '../options.ts';
import { createLogger, logFormatOption, verbosityOption, type LogOptions } from '../logger.ts';
import { untilSignal } from './run.ts';

interface BatchWorkerFlags extends LogOptions {
  kubeconfig?: string;
  podName?: string;
  namespace?: string;
  input: string;
  output: string;
  engine: string;
  model: string;
  jobUid: string;
  concurrency: number;
  reportInterval: number;
  checkpointInterval?: number;
  checkpointRecords?: number;
  batching?: string;
  pluginDir?: string;
  pluginConfigmapDir?: string;
  pluginLimits?: string;
  runtime?: string;
  kvInterval: number;
}

export function registerBatchWorker(program: Command): void {
  program
    .command('batch-worker')
    .description(
      "run beside the engine in a BatchInferenceJob's worker pod (the controller creates it): take shards from the pod's assignment annotation, send their records to the engine, write each shard's part file and report progress on the pod (docs/adr/0102)",
    )
    .requiredOption('--input <file>', 'the OpenAI batch input (JSONL), as mounted in this container')
    .requiredOption('--output <dir>', "the job's output folder, as mounted")
    .requiredOption('--engine <url>', "the engine's base URL (the pod's address and the serving port)")
    .requiredOption('--model <name>', 'the model name the engine serves')
    .requiredOption('--job-uid <uid>', "the job's uid (output line ids derive from it)")
    .option('--kubeconfig <file>', 'kubeconfig (default: in-cluster service account, else $KUBECONFIG or ~/.kube/config)')
    .option('--pod-name <name>', 'this pod (default: $POD_NAME, from the downward API)')
    .option('--namespace <ns>', "this pod's namespace (default: $POD_NAMESPACE)")
    .option('--concurrency <n>', 'requests in flight', numberOption('--concurrency', 1, 4096), 4)
    .option(
      '--batching <json>',
      "the job's dynamic batching and batch-size plugin (set by the controller): requests in flight follow the live batch size instead of --concurrency",
    )
    .option('--plugin-dir <dir>', "where the job's batch-size plugin file is (default: $SITS_PLUGIN_DIR)")
    .option('--plugin-configmap-dir <dir>', "where the pod mounts the job's plugin ConfigMap, each key a file (set by the controller)")
    .option('--plugin-limits <json>', "the operator's plugin limits {maxMemoryPages, callTimeoutMs, loadTimeoutMs} (set by the controller; default ADR 0117's)")
    .option(
      '--runtime <name>',
      "the engine's runtime (vllm, tgi, triton, llamacpp; set by the controller): its /metrics names, for the KV-cache use fed to the batch size, and its tokenizer for the tokenise stage (vllm, llamacpp; else estimated)",
    )
    .option(
      '--kv-interval <sec>',
      "at most one scrape of the engine's /metrics per this many seconds while a shard runs",
      numberOption('--kv-interval', 0.1, 3600),
      1,
    )
    .option('--report-interval <sec>', 'at most one progress report per this many seconds', numberOption('--report-interval', 0.1, 3600), 2)
    .option(
      '--checkpoint-interval <sec>',
      "checkpoint the shard's finished prefix at least this often (the job's spec.checkpoint.intervalSeconds; set by the controller); default: never",
      numberOption('--checkpoint-interval', 0.1, 86_400),
    )
    .option(
      '--checkpoint-records <n>',
      'also checkpoint after this many records (spec.checkpoint.intervalRecords)',
      intOption('--checkpoint-records', 1, 1_000_000_000),
    )
    .addOption(verbosityOption())
    .addOption(logFormatOption())
    .action(async (o: BatchWorkerFlags) => {
      const podName = o.podName ?? process.env.POD_NAME ?? '';
      const namespace = o.namespace ?? process.env.POD_NAMESPACE ?? '';
      if (podName === '' || namespace === '')
        throw new CliError(
          'batch-worker: which pod? pass --pod-name and --namespace or set POD_NAME and POD_NAMESPACE (the worker pod sets them from the downward API)',
        );
      const batching = o.batching === undefined ? undefined : parseBatchPolicy(o.batching);
      if (batching !== undefined && 'error' in batching) throw new CliError(`batch-worker: ${batching.error}`);
      const pluginDir = o.pluginDir ?? process.env.SITS_PLUGIN_DIR;
      const pluginLimits = o.pluginLimits === undefined ? undefined : parsePluginLimits(o.pluginLimits);
      if (pluginLimits !== undefined && 'error' in pluginLimits) throw new CliError(`batch-worker: ${pluginLimits.error}`);
      const runtime = o.runtime === undefined ? undefined : runtimeFor(o.runtime);
      if (o.runtime !== undefined && runtime === undefined)
        throw new CliError(`batch-worker: --runtime must be one of ${Object.keys(RUNTIMES).join(', ')}, got ${JSON.stringify(o.runtime)}`);
      const log = createLogger('sits-batch-worker', o).line;
      const client = new KubeClient(loadKubeConfig(o.kubeconfig), { maxInFlight: 4, userAgent: 'sits-batch-worker/0.1' });
      const stop = new AbortController();
      void untilSignal().then((sig) => {
        log(`${sig}: stopping`);
        stop.abort();
      });
      try {
        await runBatchWorker(
          {
            client,
            namespace,
            podName,
            input: o.input,
            output: o.output,
            engine: o.engine,
            model: o.model,
            jobUid: o.jobUid,
            concurrency: o.concurrency,
            ...(batching === undefined ? {} : { batching }),
            ...(pluginDir === undefined ? {} : { pluginDir }),
            ...(o.pluginConfigmapDir === undefined ? {} : { pluginConfigMapDir: o.pluginConfigmapDir }),
            ...(pluginLimits === undefined ? {} : { pluginLimits }),
            ...(runtime === undefined ? {} : { runtime }),
            kvEveryMs: o.kvInterval * 1000,
            reportEveryMs: o.reportInterval * 1000,
            ...(o.checkpointInterval === undefined ? {} : { checkpointEveryMs: o.checkpointInterval * 1000 }),
            ...(o.checkpointRecords === undefined ? {} : { checkpointRecords: o.checkpointRecords }),
            log,
          },
          stop.signal,
        );
      } catch (e) {
        throw new CliError(`batch-worker: ${(e as Error).message}`);
      } finally {
        client.close();
      }
    });
}
