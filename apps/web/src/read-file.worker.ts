/**
 * Reads a picked or dropped file off the main thread: a 50 MB file read,
 * checked and decoded in the page would stall it for seconds. Binary
 * content is told apart the way git does (a NUL byte in the first 8,000
 * bytes), and also by bytes that are not UTF-8 there: either way the file
 * never reaches the text box or the tool.
 */
import { classifyHead, type ReadReply } from './read-file.js';

/** What git inspects to call a file binary. */
const HEAD_BYTES = 8000;

async function read(file: File, maxBytes: number): Promise<ReadReply> {
  const bytes = file.size;
  const head = new Uint8Array(await file.slice(0, HEAD_BYTES).arrayBuffer());
  const kind = classifyHead(head, bytes <= HEAD_BYTES);
  if (kind !== 'text') return { kind: 'binary', bytes, reason: kind };
  if (bytes > maxBytes) return { kind: 'too-large', bytes };
  // Past the first chunk git does not look either: a stray Latin-1 byte further down becomes U+FFFD.
  const text = new TextDecoder('utf-8').decode(await file.arrayBuffer());
  return { kind: 'text', bytes, text };
}

addEventListener('message', (e: MessageEvent<{ id: number; file: File; maxBytes: number }>) => {
  const { id, file, maxBytes } = e.data;
  read(file, maxBytes).then(
    (reply) => postMessage({ id, ...reply }),
    (err: unknown) => postMessage({ id, kind: 'error', bytes: file.size, message: err instanceof Error ? err.message : String(err) }),
  );
});
