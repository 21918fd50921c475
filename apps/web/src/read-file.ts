/**
 * The page's side of read-file.worker.ts: files are read, checked for
 * binary content and decoded there, and only a diff's text comes back.
 */

export type ReadReply =
  | { kind: 'text'; bytes: number; text: string }
  /** `reason`: a NUL byte (git's test), or bytes that are not UTF-8, in the first 8,000 bytes. */
  | { kind: 'binary'; bytes: number; reason: 'nul' | 'not-utf8' }
  | { kind: 'too-large'; bytes: number }
  | { kind: 'error'; bytes: number; message: string };

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

let worker: Worker | null = null;
let nextId = 0;
const pending = new Map<number, { resolve: (reply: ReadReply) => void; bytes: number }>();

/** Reads `file` in the worker; files over `maxBytes` are not decoded (answered 'too-large'). */
export function readFile(file: File, maxBytes: number): Promise<ReadReply> {
  if (!worker) {
    worker = new Worker(new URL('./read-file.worker.ts', import.meta.url), { type: 'module', name: 'corral-read-file' });
    worker.addEventListener('message', (e: MessageEvent<ReadReply & { id: number }>) => {
      const { id, ...reply } = e.data;
      pending.get(id)?.resolve(reply as ReadReply);
      pending.delete(id);
    });
    worker.addEventListener('error', (e) => {
      // A worker that cannot start (a blocked script): every waiting read says so.
      for (const [id, { resolve, bytes }] of pending) {
        resolve({ kind: 'error', bytes, message: e.message || 'the file reader did not start' });
        pending.delete(id);
      }
      worker = null;
    });
  }
  const id = nextId++;
  return new Promise((resolve) => {
    pending.set(id, { resolve, bytes: file.size });
    worker!.postMessage({ id, file, maxBytes });
  });
}
