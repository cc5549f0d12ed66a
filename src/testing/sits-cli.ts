/**
 * Runs `bin/sits.mjs` in a child process for tests, without blocking this one. spawnSync would stall the
 * test's event loop for the whole run: on a loaded machine a few CLI runs in a row exceed vitest's fixed 60 s
 * worker RPC timeout ("Timeout calling onTaskUpdate", an error that fails a green run), and anything the test
 * runs in-process (a live scheduler, the fake kubelet, the controllers) stops while the child runs.
 */
import { spawn } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface SitsRun {
  /** Exit code; -1 when the child was killed by a signal. */
  readonly code: number;
  readonly out: string;
  readonly err: string;
}

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * `input`, when given, is written to the child's stdin (otherwise stdin is closed); `env` replaces the child's
 * environment (default: this process's); `timeoutMs` kills a child that hangs (code -1).
 */
export function runSits(
  args: readonly string[],
  opts: { readonly cwd?: string; readonly input?: string; readonly env?: NodeJS.ProcessEnv; readonly timeoutMs?: number } = {},
): Promise<SitsRun> {
  return new Promise((res, rej) => {
    const child = spawn(process.execPath, [join(ROOT, 'bin/sits.mjs'), ...args], {
      cwd: opts.cwd ?? ROOT,
      stdio: ['pipe', 'pipe', 'pipe'],
      ...(opts.env === undefined ? {} : { env: opts.env }),
      ...(opts.timeoutMs === undefined ? {} : { timeout: opts.timeoutMs }),
    });
    // An empty, closed stdin when there is no input: the child never waits for a terminal.
    // A child that exits without reading it closes the pipe (EPIPE): that is its business, not an error here.
    child.stdin.on('error', () => undefined);
    child.stdin.end(opts.input ?? '');
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    child.on('error', rej);
    child.on('close', (code) => res({ code: code ?? -1, out, err }));
  });
}
