/**
 * Where a reading comes from: `nvidia-smi topo -m`, `nvidia-smi -q -x` and /sys/bus/pci/devices/<bus>/numa_node.
 * The commands go through a runner so tests feed captured outputs; the sysfs root is a folder, so tests give
 * a temporary one.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { err, type Result } from '../core/result.ts';
import { deriveReading, type NodeReading } from './reading.ts';
import { parseSmiQueryXml } from './smi-query.ts';

export interface CommandResult {
  readonly stdout: string;
  readonly stderr: string;
  /** Exit code; null when killed (timeout). */
  readonly code: number | null;
}

/** Runs a command; rejects only when it cannot be started (ENOENT, EACCES). */
export type CommandRunner = (command: string, args: readonly string[], timeoutMs: number) => Promise<CommandResult>;

export const execRunner: CommandRunner = (command, args, timeoutMs) =>
  new Promise((resolve, reject) => {
    execFile(command, [...args], { timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024, encoding: 'utf8' }, (e, stdout, stderr) => {
      const code = (e as NodeJS.ErrnoException | null)?.code;
      if (typeof code === 'string') return reject(e as Error);
      resolve({ stdout, stderr, code: e === null ? 0 : ((e as { code?: number | null }).code ?? null) });
    });
  });

export interface NodeSource {
  /** Path or name of nvidia-smi. */
  readonly nvidiaSmi: string;
  /** The folder that holds bus/pci/devices (normally /sys). */
  readonly sysfsRoot: string;
  readonly runner: CommandRunner;
  readonly timeoutMs?: number;
}

async function run(src: NodeSource, args: readonly string[]): Promise<Result<string, string>> {
  const what = `${src.nvidiaSmi} ${args.join(' ')}`;
  let r: CommandResult;
  try {
    r = await src.runner(src.nvidiaSmi, args, src.timeoutMs ?? 30_000);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return err(
      code === 'ENOENT'
        ? `${src.nvidiaSmi} not found (is the NVIDIA driver installed and mounted? --nvidia-smi PATH)`
        : `${what}: cannot run: ${(e as Error).message}`,
    );
  }
  if (r.code !== 0) {
    const said = (r.stderr.trim() || r.stdout.trim()).split('\n')[0] ?? '';
    return err(`${what}: ${r.code === null ? 'timed out' : `exit code ${r.code}`}${said === '' ? '' : `: ${said}`}`);
  }
  return { ok: true, value: r.stdout };
}

/** One full reading of the node, or the first problem found. */
export async function readNode(src: NodeSource): Promise<Result<NodeReading, string>> {
  const topo = await run(src, ['topo', '-m']);
  if (!topo.ok) return topo;
  const query = await run(src, ['-q', '-x']);
  if (!query.ok) return query;
  const parsed = parseSmiQueryXml(query.value);
  if (!parsed.ok) return parsed;
  const sysfsNuma = new Map<string, number>();
  for (const g of parsed.value.gpus) {
    try {
      const v = Number((await readFile(join(src.sysfsRoot, 'bus', 'pci', 'devices', g.pciBusId, 'numa_node'), 'utf8')).trim());
      if (Number.isInteger(v)) sysfsNuma.set(g.pciBusId, v);
    } catch {
      // No such device folder (a VM without NUMA information): NUMA stays unknown for that GPU.
    }
  }
  return deriveReading({ topo: topo.value, query: query.value, sysfsNuma });
}
