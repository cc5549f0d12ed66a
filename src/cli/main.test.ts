import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { runSits } from '../testing/sits-cli.ts';
import { buildProgram, COMMANDS, VERSION } from './main.ts';

describe('the command table', () => {
  it('names exactly the commands each module registers, and every command once', async () => {
    const seen: string[] = [];
    for (const c of COMMANDS) {
      const p = new Command('x');
      (await c.load())(p);
      expect(p.commands.map((x) => x.name()).sort()).toEqual([...c.names].sort());
      seen.push(...c.names);
    }
    expect(new Set(seen).size).toBe(seen.length);
  });

  it('loads only the named command, every command for help or an unknown name, none for --version', async () => {
    const names = (p: Command): string[] => p.commands.map((c) => c.name()).sort();
    expect(names(await buildProgram(['node', 'sits', 'lint', 'x.yaml']))).toEqual(['lint']);
    expect(names(await buildProgram(['node', 'sits', '--version']))).toEqual([]);
    const all = COMMANDS.flatMap((c) => c.names).sort();
    expect(names(await buildProgram(['node', 'sits', '--help']))).toEqual(all);
    expect(names(await buildProgram(['node', 'sits', 'lnt']))).toEqual(all);
  });
});

describe('the compiled CLI (bin/sits.mjs → dist/)', () => {
  it('prints its version, and suggests a mistyped command', async () => {
    const v = await runSits(['--version']);
    expect(v).toMatchObject({ code: 0, out: `${VERSION}\n` });
    const typo = await runSits(['lnt']);
    expect(typo.code).toBe(2);
    expect(typo.err).toBe('sits: lnt: unknown command (Did you mean lint? see sits --help)\n');
  });

  it('ends quietly when its reader stops early (EPIPE), as a Unix filter does', async () => {
    const { spawn } = await import('node:child_process');
    const { join } = await import('node:path');
    const root = new URL('../..', import.meta.url).pathname;
    // `sits crds | head -c 10`: the reader closes the pipe after 10 bytes.
    const r = await new Promise<{ err: string }>((res) => {
      const child = spawn('sh', ['-c', `"${process.execPath}" "${join(root, 'bin/sits.mjs')}" crds | head -c 10 >/dev/null`], {
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let err = '';
      child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
      child.on('close', () => res({ err }));
    });
    expect(r.err).not.toContain('EPIPE');
    expect(r.err).not.toContain('Error');
  });
});
