/**
 * What both engine stand-ins' HTTP front-ends share (llama-server.ts, vllm-server.ts): an error that carries its
 * status and the engine's error type, the JSON body reader and writer, and the process life of a stand-in the dev
 * kubelet starts (SIGTERM, SIGINT or the kubelet's IPC channel closing: close, then exit 0).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

export class HttpError extends Error {
  constructor(
    readonly status: number,
    /** The engine's error type (`invalid_request_error`, `BadRequestError`, …). */
    readonly type: string,
    message: string,
    readonly param: string | null = null,
  ) {
    super(message);
  }
}

export const MAX_BODY = 8 << 20;

/** The request's JSON body (an empty body is `{}`); too large → 413, not JSON → 400, with the engine's error type. */
export async function readJson(req: IncomingMessage, errorType: string): Promise<unknown> {
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const c of req as AsyncIterable<Buffer>) {
    n += c.length;
    if (n > MAX_BODY) throw new HttpError(413, errorType, 'request body too large');
    chunks.push(c);
  }
  const t = Buffer.concat(chunks).toString('utf8');
  try {
    return JSON.parse(t === '' ? '{}' : t);
  } catch (e) {
    throw new HttpError(400, errorType, `request body is not JSON: ${(e as Error).message}`);
  }
}

export function sendJson(res: ServerResponse, status: number, body: unknown, contentType = 'application/json; charset=utf-8'): void {
  const s = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(s) });
  res.end(s);
}

/** Closes the stand-in (`close()`, given once it runs) and exits 0 on SIGTERM, SIGINT or the end of the kubelet's IPC channel. */
export function exitWhenStopped(close: () => Promise<void> | undefined): void {
  let closing = false;
  const stop = (): void => {
    if (closing) return;
    closing = true;
    void (close() ?? Promise.resolve()).finally(() => process.exit(0));
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  // Started by the dev kubelet with an IPC channel: its end closing means the kubelet's process is gone.
  if (process.send !== undefined) {
    process.on('disconnect', stop);
    process.channel?.unref();
  }
}
