/**
 * Errors of trace and workload loading. Each names the file, the 1-based line and, when one is at fault,
 * the field, so that a bad row can be found and fixed without reading the loader.
 */
export type TraceErrorCode = 'MissingColumn' | 'FieldCount' | 'BadValue' | 'Duplicate' | 'Empty' | 'BadDocument' | 'Unreadable';

export class TraceError extends Error {
  override readonly name = 'TraceError';
  constructor(
    readonly code: TraceErrorCode,
    readonly file: string,
    readonly line: number,
    readonly field: string | undefined,
    readonly detail: string,
  ) {
    super(`${file}${line > 0 ? `:${line}` : ''}${field === undefined ? '' : `: field "${field}"`}: ${detail}`);
  }
}
