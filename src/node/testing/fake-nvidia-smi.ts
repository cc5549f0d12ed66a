/**
 * A stand-in `nvidia-smi` for tests (no GPU here): a shell script printing given outputs for `topo -m` and
 * `-q -x`, run through the real command runner, so the agent's process handling is exercised too.
 */
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Writes `<dir>/nvidia-smi` (and its two outputs) and returns its path. */
export function writeFakeNvidiaSmi(dir: string, topo: string, query: string, exitCode = 0): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'topo.txt'), topo);
  writeFileSync(join(dir, 'q.xml'), query);
  const script = join(dir, 'nvidia-smi');
  writeFileSync(script, `#!/bin/sh\ncase "$1" in\n  topo) cat "${dir}/topo.txt" ;;\n  -q) cat "${dir}/q.xml" ;;\nesac\nexit ${exitCode}\n`);
  chmodSync(script, 0o755);
  return script;
}
