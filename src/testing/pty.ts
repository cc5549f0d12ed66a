// `sits` in a real pseudo-terminal (node-pty), with the environment a person's terminal has: chalk's
// supports-color turns colour off when it sees CI markers (`CI`, `TF_BUILD`, `TEAMCITY_VERSION`) or
// NO_COLOR/FORCE_COLOR, even on a TTY, and the CI runner sets them, so they are dropped here.
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawn as ptySpawn } from '@lydell/node-pty';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const NOT_A_TERMINAL = new Set(['CI', 'TF_BUILD', 'TEAMCITY_VERSION', 'NO_COLOR', 'FORCE_COLOR', 'COLORTERM']);

export function terminalEnv(source: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(source)) if (v !== undefined && !NOT_A_TERMINAL.has(k)) env[k] = v;
  return { ...env, TERM: 'xterm-256color' };
}

export function sitsInPty(
  args: readonly string[],
  opts: { cols?: number; rows?: number; interruptWhen?: (out: string) => boolean } = {},
): Promise<{ code: number; out: string }> {
  return new Promise((res) => {
    const p = ptySpawn(process.execPath, [join(ROOT, 'bin/sits.mjs'), ...args], {
      name: 'xterm-256color',
      cols: opts.cols ?? 120,
      rows: opts.rows ?? 60,
      cwd: ROOT,
      env: terminalEnv(),
    });
    let out = '';
    let interrupted = false;
    p.onData((d) => {
      out += d;
      // Ctrl-C as a person would end a --watch, once what the test waits for is on the screen.
      if (!interrupted && opts.interruptWhen?.(out) === true) {
        interrupted = true;
        p.kill('SIGINT');
      }
    });
    p.onExit(({ exitCode }) => res({ code: exitCode, out }));
  });
}
