/**
 * Reading a picked or dropped file, in the runtime's worker (never on the
 * page's thread: a 50 MB file read, checked and decoded there would stall
 * it for seconds). Binary content is told apart the way git does (a NUL
 * byte in the first 8,000 bytes), and also by bytes that are not UTF-8
 * there: either way the file never reaches the text box or the tool.
 */

export type ReadReply =
  | { kind: 'text'; bytes: number; text: string }
  /** `reason`: a NUL byte (git's test), or bytes that are not UTF-8, in the first 8,000 bytes. */
  | { kind: 'binary'; bytes: number; reason: 'nul' | 'not-utf8' }
  | { kind: 'too-large'; bytes: number }
  | { kind: 'error'; bytes: number; message: string };

/** What git inspects to call a file binary. */
const HEAD_BYTES = 8000;

/**
 * Whether a file's first bytes look like text: 'nul' for a NUL byte, as
 * git decides; 'not-utf8' for bytes that are not UTF-8 (`whole`: these are
 * all the file's bytes, so a character cut at the end is invalid too;
 * otherwise the chunk may end inside one).
 */
export function classifyHead(head: Uint8Array, whole: boolean): 'text' | 'nul' | 'not-utf8' {
  if (head.includes(0)) return 'nul';
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(head, { stream: !whole });
    return 'text';
  } catch {
    return 'not-utf8';
  }
}

/** Reads `file` as a diff's text; files over `maxBytes` are not decoded (answered 'too-large'). */
export async function readDiffFile(file: Blob, maxBytes: number): Promise<ReadReply> {
  const bytes = file.size;
  try {
    const head = new Uint8Array(await file.slice(0, HEAD_BYTES).arrayBuffer());
    const kind = classifyHead(head, bytes <= HEAD_BYTES);
    if (kind !== 'text') return { kind: 'binary', bytes, reason: kind };
    if (bytes > maxBytes) return { kind: 'too-large', bytes };
    // Past the first chunk git does not look either: a stray Latin-1 byte further down becomes U+FFFD.
    const text = new TextDecoder('utf-8').decode(await file.arrayBuffer());
    return { kind: 'text', bytes, text };
  } catch (err) {
    return { kind: 'error', bytes, message: err instanceof Error ? err.message : String(err) };
  }
}

/** UTF-8 length of a string, without encoding it (a 50 MB copy just to count). */
export function utf8Length(text: string): number {
  let n = text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0x80) n += c < 0x800 ? 1 : c >= 0xd800 && c <= 0xdbff ? 0 : 2;
  }
  return n;
}

/** A large text's first `chars` characters, cut at a line end so no half line is shown. */
export function textStart(text: string, chars: number): string {
  const cut = text.lastIndexOf('\n', chars);
  return text.slice(0, cut > 0 ? cut : chars);
}
