import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { waitFor } from '../harness/e2e-kit.ts';
import { olderNode } from '../testing/older-node.ts';

const ROOT = join(import.meta.dirname, '../..');

const OLD_NODE = olderNode();

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

// A SIGTERM that arrives while a server command is still starting (here: its apiserver accepts connections and
// never answers) used to kill it with the default action, exit by signal; CI caught `sits webhook` so. Now the
// first signal is kept for the clean stop after start-up, and a second one exits at once with 128+15.
// Under an older Node, bin/sits.mjs runs the command in a Node 24 child: a signal sent to the wrapper alone left
// that child running; a terminal's Ctrl-C reaches both, and must still count once.
describe('a signal during start-up', () => {
  const tmp = mkdtempSync(join(tmpdir(), 'sits-signals-'));
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  async function check(node: string, signal: 'SIGTERM' | 'SIGINT', to: 'process' | 'group'): Promise<void> {
    const sockets: Socket[] = [];
    let connected!: () => void;
    const firstConnection = new Promise<void>((resolve) => (connected = resolve));
    const mute = createServer((s) => {
      sockets.push(s);
      connected();
    });
    await new Promise<void>((resolve) => mute.listen(0, '127.0.0.1', resolve));
    const port = (mute.address() as { port: number }).port;
    const kubeconfig = join(tmp, `kubeconfig-${port}`);
    writeFileSync(
      kubeconfig,
      `apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://127.0.0.1:${port}", insecure-skip-tls-verify: true}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n`,
    );
    // detached: its own process group, as a shell gives a foreground command, so the group can be signalled.
    const child = spawn(node, [join(ROOT, 'bin/sits.mjs'), 'controllers', `--kubeconfig=${kubeconfig}`, '--no-leader-elect', '--health-port=0'], {
      cwd: ROOT,
      stdio: ['ignore', 'ignore', 'pipe'],
      detached: true,
    });
    const pid = child.pid ?? 0;
    const send = (): boolean => process.kill(to === 'group' ? -pid : pid, signal);
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    const exited = new Promise<number | string | null>((resolve) => child.on('close', (code, sig) => resolve(code ?? sig)));
    try {
      await Promise.race([
        firstConnection,
        exited.then((e) => Promise.reject(new Error(`sits controllers ended (${String(e)}) before calling its apiserver:\n${stderr}`))),
      ]);
      send();
      // Past the 1 s in which the same signal again counts as the first one twice.
      const early = await Promise.race([exited, new Promise((resolve) => setTimeout(() => resolve('still running'), 1_500))]);
      expect(early, `after the first ${signal}, during start-up; stderr:\n${stderr}`).toBe('still running');
      send();
      expect(await exited, `after the second ${signal}; stderr:\n${stderr}`).toBe(signal === 'SIGINT' ? 130 : 143);
      // No process of the group is left (the Node 24 child of a wrapper included). A build of dist/ before the command
      // leaves esbuild's service process, which ends when it sees its parent's pipe close: hence the wait.
      await waitFor('every process of the group to end', () => Promise.resolve(!groupAlive(pid)), 10_000);
    } finally {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        // gone already
      }
      for (const s of sockets) s.destroy();
      mute.close();
    }
  }

  it('is kept (the process does not die of it); a second one exits 143', async () => {
    await check(process.execPath, 'SIGTERM', 'process');
  });

  describe.skipIf(OLD_NODE === undefined)(`under ${OLD_NODE ?? 'a Node older than 24 (none on PATH: skipped)'}, through the wrapper`, () => {
    it('a SIGTERM sent to the wrapper alone reaches the command; the second exits 143 and leaves no process', async () => {
      await check(OLD_NODE ?? '', 'SIGTERM', 'process');
    });
    it('a Ctrl-C, which the terminal sends to both, counts once; the second exits 130', async () => {
      await check(OLD_NODE ?? '', 'SIGINT', 'group');
    });
  });
});
