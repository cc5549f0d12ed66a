/** Result files of the benchmarks. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

/** Writes a result file, creating its folder first (results go to bench/results/… by default). */
export function writeFileMkdir(file: string, text: string): void {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text);
}
