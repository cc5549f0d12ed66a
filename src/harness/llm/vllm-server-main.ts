/**
 * The vLLM stand-in as a process (what the dev kubelet starts for a pod of the vllm runtime): the pod's container
 * args on the command line, as the vllm/vllm-openai image's entrypoint would get them, and the container's
 * environment (VLLM_ALLOW_RUNTIME_LORA_UPDATING). SITS_LLAMA_PATHS maps container paths (the pod's /mnt/models,
 * /mnt/adapters/x) to files on this machine, as for the llama-server stand-in. Bad arguments exit 2 with argparse's
 * message; SIGTERM (or the parent's IPC channel closing) closes the server and exits 0.
 */
import { exitWhenStopped } from './engine-http.ts';
import { containerPathResolver } from './engine-core.ts';
import { parseVllmArgs, VllmArgsError, VllmServerStandIn } from './vllm-server.ts';

let server: VllmServerStandIn | undefined;
exitWhenStopped(() => server?.close());

async function main(): Promise<void> {
  let opts;
  try {
    opts = parseVllmArgs(process.argv.slice(2), process.env, containerPathResolver(process.env.SITS_LLAMA_PATHS));
  } catch (e) {
    process.stderr.write(`${e instanceof VllmArgsError ? e.message : `error: ${(e as Error).message}`}\n`);
    process.exit(2);
  }
  try {
    server = new VllmServerStandIn({ ...opts, log: (l) => process.stderr.write(`${l}\n`) });
    const a = await server.start();
    process.stderr.write(`vllm stand-in listening on http://${a.host}:${a.port}\n`);
  } catch (e) {
    process.stderr.write(`error: ${(e as Error).message}\n`);
    process.exit(1);
  }
}

void main();
