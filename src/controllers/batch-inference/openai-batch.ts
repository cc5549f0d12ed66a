/**
 * The OpenAI batch file format (platform.openai.com/docs/guides/batch): the input is JSONL, one request a line,
 * `{custom_id, method, url, body}`, custom_id unique in the file; the output is JSONL, one line per request,
 * `{id, custom_id, response: {status_code, request_id, body} | null, error: {code, message} | null}`.
 * Pure: lines come in as text (the streaming reader is live/batch/batch-files.ts); a bad line is an error naming
 * file:line:column and the field. The request shape is a TypeBox schema, so validation and the error paths
 * come from the library, not from hand-written checks.
 */
import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';

export const BATCH_URLS = ['/v1/chat/completions', '/v1/completions', '/v1/embeddings'] as const;

export const BatchRequestLine = Type.Object(
  {
    custom_id: Type.String({ minLength: 1, maxLength: 512 }),
    method: Type.Literal('POST'),
    url: Type.Union(BATCH_URLS.map((u) => Type.Literal(u))),
    body: Type.Object(
      {
        model: Type.Optional(Type.String({ minLength: 1 })),
        max_tokens: Type.Optional(Type.Integer({ minimum: 1 })),
        max_completion_tokens: Type.Optional(Type.Integer({ minimum: 1 })),
      },
      { additionalProperties: true },
    ),
  },
  { additionalProperties: false },
);
export type BatchRequestLine = Static<typeof BatchRequestLine>;

export interface BatchOutputLine {
  readonly id: string;
  readonly custom_id: string;
  readonly response: { readonly status_code: number; readonly request_id: string; readonly body: unknown } | null;
  readonly error: { readonly code: string; readonly message: string } | null;
}

export class BatchFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BatchFormatError';
  }
}

/** What the coordinator keeps of a request: its id and the token counts it plans with. */
export interface RecordInfo {
  readonly customId: string;
  /** Prompt tokens: counted by the caller when known, else estimated (4 characters a token). */
  readonly promptTokens: number;
  /** Output tokens at most: body.max_completion_tokens or max_tokens, else `defaultMaxTokens`. */
  readonly maxOutputTokens: number;
}

/** Column (1-based) of a JSON.parse error: V8 reports "at position N" (0-based) or "line L column C". */
function jsonErrorColumn(message: string): number {
  const pos = /position (\d+)/.exec(message);
  if (pos !== null) return Number(pos[1]) + 1;
  const lc = /column (\d+)/.exec(message);
  return lc !== null ? Number(lc[1]) : 1;
}

/** Rough token count of a request body's text, for planning only (batch sizes, shard sizes). */
export function estimatePromptTokens(body: Readonly<Record<string, unknown>>): number {
  const text = JSON.stringify(body.messages ?? body.prompt ?? body.input ?? '');
  return Math.max(1, Math.ceil(text.length / 4));
}

/** Parses and validates one input line; `line` is 1-based. */
export function parseRequestLine(text: string, file: string, line: number, defaultMaxTokens = 256): { request: BatchRequestLine; info: RecordInfo } {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    const msg = (e as Error).message;
    throw new BatchFormatError(`${file}:${line}:${jsonErrorColumn(msg)}: not JSON: ${msg}`);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new BatchFormatError(`${file}:${line}:1: a request must be a JSON object {custom_id, method, url, body}`);
  const first = Value.Errors(BatchRequestLine, raw).First();
  if (first !== undefined) {
    const field = first.path === '' ? '(line)' : first.path.slice(1).replace(/\//g, '.');
    throw new BatchFormatError(`${file}:${line}:1: ${field}: ${first.message}${first.path === '' ? '' : ` (got ${JSON.stringify(first.value) ?? 'nothing'})`}`);
  }
  const request = raw as BatchRequestLine;
  const maxOut = request.body.max_completion_tokens ?? request.body.max_tokens ?? defaultMaxTokens;
  return { request, info: { customId: request.custom_id, promptTokens: estimatePromptTokens(request.body), maxOutputTokens: maxOut } };
}

/**
 * Validates a whole input line by line: every line parses, custom_id is unique (the output is keyed by it, so a
 * duplicate would make "exactly once" meaningless). Collects up to `maxErrors` errors, then stops collecting.
 */
export class BatchInputValidator {
  readonly records: RecordInfo[] = [];
  readonly errors: string[] = [];
  private readonly seen = new Map<string, number>();
  constructor(
    private readonly file: string,
    private readonly maxErrors = 20,
    private readonly defaultMaxTokens = 256,
  ) {}

  /** Feeds line `line` (1-based); blank lines are skipped, as JSONL readers do. */
  feed(text: string, line: number): void {
    if (text.trim() === '') return;
    try {
      const { info } = parseRequestLine(text, this.file, line, this.defaultMaxTokens);
      const prev = this.seen.get(info.customId);
      if (prev !== undefined) throw new BatchFormatError(`${this.file}:${line}:1: custom_id: ${JSON.stringify(info.customId)} already used on line ${prev}`);
      this.seen.set(info.customId, line);
      this.records.push(info);
    } catch (e) {
      if (!(e instanceof BatchFormatError)) throw e;
      if (this.errors.length < this.maxErrors) this.errors.push(e.message);
    }
  }

  /** The records, or every collected error at once. */
  result(): { ok: true; records: readonly RecordInfo[] } | { ok: false; errors: readonly string[] } {
    if (this.errors.length > 0) return { ok: false, errors: this.errors };
    if (this.records.length === 0) return { ok: false, errors: [`${this.file}: no requests`] };
    return { ok: true, records: this.records };
  }
}

/** The output line id: derived from the job and the custom_id, so a recomputed record gets the same id. */
export function outputId(jobUid: string, customId: string): string {
  // FNV-1a over the pair: short, stable, no crypto needed (the id is a name, not a secret).
  let h = 0x811c9dc5;
  for (const ch of `${jobUid}\u0000${customId}`) {
    h ^= ch.codePointAt(0) ?? 0;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return `batch_req_${h.toString(16).padStart(8, '0')}`;
}

export function successLine(jobUid: string, customId: string, body: unknown, statusCode = 200): BatchOutputLine {
  const id = outputId(jobUid, customId);
  return { id, custom_id: customId, response: { status_code: statusCode, request_id: id, body }, error: null };
}

export function errorLine(jobUid: string, customId: string, code: string, message: string): BatchOutputLine {
  return { id: outputId(jobUid, customId), custom_id: customId, response: null, error: { code, message } };
}

/** Reads the custom_id of an output line; undefined when the line is not an output line. */
export function outputCustomId(text: string): string | undefined {
  try {
    const v = JSON.parse(text) as { custom_id?: unknown };
    return typeof v.custom_id === 'string' ? v.custom_id : undefined;
  } catch {
    return undefined;
  }
}
