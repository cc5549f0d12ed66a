/**
 * The file-system side of batch inference: the output volume as an OutputStore (each file written whole or not at
 * all: temporary file, fsync, rename, fsync of the directory, so a crash leaves the old file or the new one and a
 * committed manifest survives power loss), and the streaming reader of an OpenAI batch input that names
 * file:line:column of a bad line without loading the file into memory.
 */
import { constants, createReadStream, closeSync, fsyncSync, mkdirSync, openSync, readFileSync, readdirSync, renameSync, rmSync, writeSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { createInterface } from 'node:readline';
import type { OutputStore } from '../../controllers/batch-inference/output-store.ts';
import { OutputWriteError } from '../../controllers/batch-inference/output-store.ts';
import type { RecordInfo } from '../../controllers/batch-inference/openai-batch.ts';
import { BatchInputValidator } from '../../controllers/batch-inference/openai-batch.ts';

function fsyncDir(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

export class FsOutputStore implements OutputStore {
  private seq = 0;
  constructor(readonly dir: string) {
    mkdirSync(dir, { recursive: true });
  }

  list(): string[] {
    const out: string[] = [];
    const walk = (d: string): void => {
      for (const e of readdirSync(d, { withFileTypes: true })) {
        const p = join(d, e.name);
        if (e.isDirectory()) walk(p);
        else out.push(relative(this.dir, p).split(sep).join('/'));
      }
    };
    walk(this.dir);
    return out.sort();
  }

  read(name: string): string | undefined {
    try {
      // O_NOFOLLOW: a symlink planted in the output (a worker writes there) is not followed out of the claim.
      const fd = openSync(join(this.dir, name), constants.O_RDONLY | constants.O_NOFOLLOW);
      try {
        return readFileSync(fd, 'utf8');
      } finally {
        closeSync(fd);
      }
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw e;
    }
  }

  writeAtomic(name: string, text: string): void {
    const path = join(this.dir, name);
    const tmp = `${path}.tmp-${process.pid}-${++this.seq}`;
    mkdirSync(dirname(path), { recursive: true });
    try {
      const fd = openSync(tmp, 'w');
      try {
        writeSync(fd, text);
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      renameSync(tmp, path);
      fsyncDir(dirname(path));
    } catch (e) {
      rmSync(tmp, { force: true });
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOSPC' || code === 'EDQUOT' || code === 'EROFS')
        throw new OutputWriteError(`${path}: ${code === 'EROFS' ? 'the output volume is read-only' : 'no space left on the output volume'} (${code})`);
      throw e;
    }
  }

  remove(name: string): void {
    rmSync(join(this.dir, name), { force: true });
  }
}

/** Reads and validates an OpenAI batch input line by line (streaming); every error names file:line:column. */
export async function readBatchInput(
  file: string,
  o: { maxErrors?: number; defaultMaxTokens?: number } = {},
): Promise<{ ok: true; records: readonly RecordInfo[] } | { ok: false; errors: readonly string[] }> {
  const v = new BatchInputValidator(file, o.maxErrors ?? 20, o.defaultMaxTokens ?? 256);
  let input: ReturnType<typeof createReadStream>;
  try {
    input = createReadStream(file, { encoding: 'utf8' });
    await new Promise<void>((resolve, reject) => {
      input.once('open', () => resolve());
      input.once('error', reject);
    });
  } catch (e) {
    return { ok: false, errors: [`${file}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (e as Error).message}`] };
  }
  const lines = createInterface({ input, crlfDelay: Infinity });
  let n = 0;
  for await (const line of lines) v.feed(line, ++n);
  return v.result();
}
