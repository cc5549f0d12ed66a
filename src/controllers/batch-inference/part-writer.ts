/**
 * What a worker does with an assignment, as plain data: the part file's lines for its records (a response with
 * usage, or an error for the records the engine refused). The simulator and the tests use it; the real worker
 * writes the same lines from the engine's responses.
 */
import type { Assignment } from './coordinator.ts';
import type { RecordInfo } from './openai-batch.ts';
import { errorLine, successLine } from './openai-batch.ts';
import type { OutputStore } from './output-store.ts';

export interface PartOptions {
  /** Write only the first n records (a straggler stopping at its cut). */
  readonly upTo?: number;
  /** Records (by index) the engine answered with an error. */
  readonly refused?: ReadonlySet<number>;
  /** Output tokens per record (default: its maxOutputTokens). */
  readonly outputTokens?: (index: number) => number;
}

export function partLines(jobUid: string, records: readonly RecordInfo[], a: Pick<Assignment, 'range'>, o: PartOptions = {}): string[] {
  const end = o.upTo === undefined ? a.range.end : Math.min(a.range.end, a.range.start + o.upTo);
  const lines: string[] = [];
  for (let i = a.range.start; i < end; i++) {
    const r = records[i] as RecordInfo;
    if (o.refused?.has(i) === true) {
      lines.push(JSON.stringify(errorLine(jobUid, r.customId, 'invalid_request', 'the engine refused the request')));
      continue;
    }
    const out = o.outputTokens?.(i) ?? r.maxOutputTokens;
    const usage = { prompt_tokens: r.promptTokens, completion_tokens: out, total_tokens: r.promptTokens + out };
    lines.push(JSON.stringify(successLine(jobUid, r.customId, { object: 'chat.completion', usage })));
  }
  return lines;
}

export function writePart(
  store: OutputStore,
  jobUid: string,
  records: readonly RecordInfo[],
  a: Pick<Assignment, 'range' | 'part'>,
  o: PartOptions = {},
): void {
  const lines = partLines(jobUid, records, a, o);
  store.writeAtomic(a.part, lines.length === 0 ? '' : `${lines.join('\n')}\n`);
}
