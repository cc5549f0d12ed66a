/**
 * The llama-server stand-in as a process (what the dev kubelet starts for a pod of the llamacpp runtime): the
 * pod's container args on the command line, exactly as the llama.cpp image's entrypoint would get them.
 * Environment: SITS_LLAMA_PATHS, a JSON object mapping container paths (the pod's /mnt/models, /mnt/adapters/x)
 * to files on this machine; SITS_LLAMA_HOLD_FILE, stay "Loading model" while that file exists (tests);
 * SITS_LLAMA_FAIL_FILE, fail every completion with 500 while that file exists (an injected device fault, tests).
 * Bad arguments exit 1 with llama-server's style of message; SIGTERM (or the parent's IPC channel closing) closes
 * the server and exits 0.
 */
import { exitWhenStopped } from './engine-http.ts';
import { containerPathResolver as resolver } from './engine-core.ts';
import { ArgsError, LlamaServerStandIn, parseLlamaServerArgs } from './llama-server.ts';

let server: LlamaServerStandIn | undefined;
exitWhenStopped(() => server?.close());

async function main(): Promise<void> {
  try {
    const opts = parseLlamaServerArgs(process.argv.slice(2), resolver(process.env.SITS_LLAMA_PATHS));
    const hold = process.env.SITS_LLAMA_HOLD_FILE;
    const fail = process.env.SITS_LLAMA_FAIL_FILE;
    server = new LlamaServerStandIn({
      ...opts,
      ...(hold !== undefined && hold !== '' ? { holdWhileExists: hold } : {}),
      ...(fail !== undefined && fail !== '' ? { failWhileExists: fail } : {}),
      log: (l) => process.stderr.write(`${l}\n`),
    });
    const a = await server.start();
    process.stderr.write(`llama-server stand-in listening on http://${a.host}:${a.port}\n`);
  } catch (e) {
    process.stderr.write(`${e instanceof ArgsError ? e.message : `error: ${(e as Error).message}`}\n`);
    process.exit(1);
  }
}

void main();
