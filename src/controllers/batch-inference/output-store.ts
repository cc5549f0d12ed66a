/**
 * The output volume as the coordinator sees it: a flat namespace of files written whole or not at all. The file
 * system adapter (live/batch/batch-files.ts) does it with a temporary file, fsync and rename; the memory one here is for
 * tests and the simulator, and can be told to fail a write, as a full volume or a crash mid-commit would.
 */
export interface OutputStore {
  /** Every file name, sorted. */
  list(): string[];
  read(name: string): string | undefined;
  /** Replaces `name` atomically: a reader sees the old content or the new, never a mix. Throws when the volume refuses. */
  writeAtomic(name: string, text: string): void;
  remove(name: string): void;
}

export class OutputWriteError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OutputWriteError';
  }
}

export class MemoryOutputStore implements OutputStore {
  readonly files = new Map<string, string>();
  /** Writes left before the volume is "full" (undefined: never). */
  capacityWrites: number | undefined;
  writes = 0;
  list(): string[] {
    return [...this.files.keys()].sort();
  }
  read(name: string): string | undefined {
    return this.files.get(name);
  }
  writeAtomic(name: string, text: string): void {
    if (this.capacityWrites !== undefined && this.writes >= this.capacityWrites) throw new OutputWriteError(`${name}: no space left on the output volume`);
    this.writes++;
    this.files.set(name, text);
  }
  remove(name: string): void {
    this.files.delete(name);
  }
}
