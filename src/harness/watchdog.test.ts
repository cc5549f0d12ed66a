import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { scaled } from '../testing/timeouts.ts';
import { WATCHDOG_SCRIPT } from './control-plane.ts';

// The orphan watchdog script as the control plane spawns it; closing its stdin is what the death of its parent does.
describe('the orphan watchdog (watchdog.mjs)', () => {
  const started: ChildProcess[] = [];
  const dirs: string[] = [];
  afterEach(() => {
    for (const c of started.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  const setUp = (): { victim: ChildProcess; watchdog: ChildProcess; dir: string } => {
    const dir = mkdtempSync(join(tmpdir(), 'sits-watchdog-test-'));
    dirs.push(dir);
    // A process group of its own, as the control plane's etcd and kube-apiserver are.
    const victim = spawn('sleep', ['600'], { detached: true, stdio: 'ignore' });
    const watchdog = spawn(process.execPath, [WATCHDOG_SCRIPT], { stdio: ['pipe', 'ignore', 'ignore'] });
    started.push(victim, watchdog);
    watchdog.stdin?.write(`+${victim.pid}\ndir ${dir}\n`);
    return { victim, watchdog, dir };
  };

  it(
    'kills the registered process groups and removes the dir when the pipe from its parent closes',
    async () => {
      const { victim, watchdog, dir } = setUp();
      const victimExit = once(victim, 'exit');
      watchdog.stdin?.end();
      const [code, signal] = (await victimExit) as [number | null, NodeJS.Signals | null];
      expect({ code, signal }).toEqual({ code: null, signal: 'SIGTERM' });
      await once(watchdog, 'exit');
      expect(watchdog.exitCode).toBe(0);
      expect(existsSync(dir)).toBe(false);
    },
    scaled(15_000),
  );

  it(
    'forgets everything after "bye": the groups live on and the dir stays',
    async () => {
      const { victim, watchdog, dir } = setUp();
      watchdog.stdin?.write('bye\n');
      watchdog.stdin?.end();
      await once(watchdog, 'exit');
      expect(watchdog.exitCode).toBe(0);
      expect(victim.exitCode === null && victim.signalCode === null).toBe(true);
      expect(existsSync(dir)).toBe(true);
    },
    scaled(15_000),
  );
});
