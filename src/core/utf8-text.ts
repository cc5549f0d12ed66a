/**
 * Whether bytes read from a file or stdin are text: the CLI's file inputs and `sits lint` refuse binary data (a NUL
 * byte, or bytes that are not UTF-8) instead of parsing or echoing it.
 */
export type Utf8Text = { readonly text: string } | { readonly binaryAt: number };

/** The bytes as UTF-8 text, or where they stop being text: a NUL byte's offset, or 0 for bytes that are not UTF-8. */
export function utf8Text(bytes: Uint8Array): Utf8Text {
  const nul = bytes.indexOf(0);
  if (nul !== -1) return { binaryAt: nul };
  try {
    return { text: new TextDecoder('utf-8', { fatal: true }).decode(bytes) };
  } catch {
    return { binaryAt: 0 };
  }
}
