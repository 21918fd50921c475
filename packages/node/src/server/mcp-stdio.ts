/**
 * MCP over stdio for `corral mcp`: newline-delimited JSON-RPC, as the SDK's
 * StdioServerTransport reads it, but a line the server cannot take does not
 * end the session. The SDK's transport closes itself on a message over its
 * buffer limit (and drops one that is not JSON without a word): the server
 * then answered nothing more while its process lived on, and the client
 * waited. Here such a line is answered with a JSON-RPC error (to its request
 * id when it can be read from the line), logged, and the next one is read.
 */
import type { Readable, Writable } from 'node:stream';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, JSONRPCMessageSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/** The longest message read, as the SDK's stdio transport has it; a longer line is answered with an error and skipped. */
export const MAX_STDIO_MESSAGE_BYTES = 10 * 2 ** 20;
/** How much of a skipped line's start and end is kept, to find its request id. */
const KEEP = 512;

type Id = string | number | null;

export class LineStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  readonly #stdin: Readable;
  readonly #stdout: Writable;
  readonly #maxBytes: number;
  readonly #log: (message: string) => void;
  /** The line read so far (not while skipping one). */
  #chunks: Buffer[] = [];
  #size = 0;
  /** Skipping a line over the limit: its first and latest bytes, for its id. */
  #skipping: { head: Buffer; tail: Buffer } | undefined;
  #started = false;
  #closed = false;
  /** The rest of a chunk not read yet: stdout was backed up (a client that does not read its answers). */
  #held: Buffer | undefined;
  /** Requests read and not answered yet (how many, by JSON of their id), and who waits for there to be none. */
  readonly #open = new Map<string, number>();
  #idle: (() => void)[] = [];
  /** Lines dropped so far; only some are logged, so a flood of them cannot fill an unread stderr. */
  #dropped = 0;
  /** Resolves when stdout drains, for the answers written while it was backed up. */
  #drained: Promise<void> | undefined;

  constructor(stdin: Readable, stdout: Writable, options: { maxMessageBytes?: number; log?: (message: string) => void } = {}) {
    this.#stdin = stdin;
    this.#stdout = stdout;
    this.#maxBytes = options.maxMessageBytes ?? MAX_STDIO_MESSAGE_BYTES;
    this.#log = options.log ?? (() => {});
  }

  async start(): Promise<void> {
    if (this.#started) throw new Error('LineStdioTransport already started');
    this.#started = true;
    this.#stdin.on('data', this.#onData);
    this.#stdin.on('error', this.#onError);
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#held = undefined;
    this.#stdout.off('drain', this.#onDrain);
    this.#stdin.off('data', this.#onData);
    this.#stdin.off('error', this.#onError);
    if (this.#stdin.listenerCount('data') === 0) this.#stdin.pause();
    this.#chunks = [];
    this.#size = 0;
    this.#skipping = undefined;
    this.#open.clear();
    this.#settle();
    this.onclose?.();
  }

  /**
   * Resolves once every request read so far has been answered (at once when none waits). `corral mcp`
   * waits for it when the client closes stdin, so a call in flight then still gets its answer.
   */
  idle(): Promise<void> {
    if (this.#open.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  #answered(id: unknown): void {
    const key = JSON.stringify(id);
    const n = this.#open.get(key);
    if (n === undefined) return;
    if (n > 1) this.#open.set(key, n - 1);
    else this.#open.delete(key);
    this.#settle();
  }

  #settle(): void {
    if (this.#open.size > 0) return;
    const waiting = this.#idle;
    this.#idle = [];
    for (const resolve of waiting) resolve();
  }

  send(message: JSONRPCMessage): Promise<void> {
    const m = message as { id?: unknown; method?: unknown };
    if (m.method === undefined && m.id !== undefined) this.#answered(m.id);
    if (this.#stdout.write(`${JSON.stringify(message)}\n`)) return Promise.resolve();
    // One 'drain' listener for every answer waiting, not one each (Node warns past ten).
    this.#drained ??= new Promise((resolve) =>
      this.#stdout.once('drain', () => {
        this.#drained = undefined;
        resolve();
      }),
    );
    return this.#drained;
  }

  readonly #onError = (error: Error) => this.onerror?.(error);

  readonly #onData = (chunk: Buffer) => this.#read(chunk);

  /**
   * Lines of `chunk`, until stdout is backed up: then the rest is held and stdin paused until stdout
   * drains. Read on regardless, a client that never read its answers (each line may be answered, if
   * only with an error) grew this process's memory without bound, hundreds of bytes per line sent.
   */
  #read(chunk: Buffer): void {
    let at = 0;
    while (at < chunk.length) {
      if (this.#stdout.writableNeedDrain) {
        this.#held = chunk.subarray(at);
        this.#stdin.pause();
        this.#stdout.once('drain', this.#onDrain);
        return;
      }
      const end = chunk.indexOf(0x0a, at);
      const piece = chunk.subarray(at, end === -1 ? chunk.length : end);
      this.#take(piece);
      if (end === -1) break;
      this.#lineEnded();
      at = end + 1;
    }
  }

  readonly #onDrain = () => {
    const held = this.#held;
    this.#held = undefined;
    if (this.#closed) return;
    if (held) this.#read(held);
    if (this.#held === undefined) this.#stdin.resume();
  };

  /** Part of the current line. */
  #take(piece: Buffer): void {
    if (piece.length === 0) return;
    if (this.#skipping) {
      this.#skipping.tail = lastBytes(Buffer.concat([this.#skipping.tail, piece]));
      return;
    }
    if (this.#size + piece.length <= this.#maxBytes) {
      this.#chunks.push(piece);
      this.#size += piece.length;
      return;
    }
    // Over the limit: keep only what may name the request, drop the rest as it comes.
    const line = Buffer.concat([...this.#chunks, piece]);
    this.#skipping = { head: line.subarray(0, KEEP), tail: lastBytes(line) };
    this.#chunks = [];
    this.#size = 0;
  }

  #lineEnded(): void {
    const skipped = this.#skipping;
    if (skipped) {
      this.#skipping = undefined;
      const id = idOf(skipped.head, skipped.tail);
      this.#drop(`a message over ${this.#maxBytes} bytes was dropped${id === undefined ? '' : ` (request id ${JSON.stringify(id)})`}`);
      // A notification, or an id that cannot be read: nothing to answer, or answered to nobody in particular (null).
      if (id !== undefined)
        this.#reply(id, ErrorCode.InvalidRequest, `The message is over ${this.#maxBytes} bytes, the most this server reads`, {
          reason: 'message_too_large',
          max_message_bytes: this.#maxBytes,
        });
      return;
    }
    const text = Buffer.concat(this.#chunks, this.#size).toString('utf8').replace(/\r$/, '');
    this.#chunks = [];
    this.#size = 0;
    if (text.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      this.#drop('a line that is not JSON was dropped');
      return this.#reply(null, ErrorCode.ParseError, 'Parse error: the line is not JSON');
    }
    const parsed = JSONRPCMessageSchema.safeParse(value);
    if (!parsed.success) {
      this.#drop('a line that is not a JSON-RPC message was dropped');
      const id = (value as { id?: unknown } | null)?.id;
      return this.#reply(
        typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)) ? id : null,
        ErrorCode.InvalidRequest,
        'Invalid Request: not a JSON-RPC 2.0 message',
      );
    }
    const message = parsed.data as { id?: unknown; method?: unknown; params?: { requestId?: unknown } };
    if (message.method !== undefined && message.id !== undefined) {
      const key = JSON.stringify(message.id);
      this.#open.set(key, (this.#open.get(key) ?? 0) + 1);
    }
    // The SDK sends no answer to a request the client cancelled: it waits for none.
    if (message.method === 'notifications/cancelled' && message.params?.requestId !== undefined) this.#answered(message.params.requestId);
    this.onmessage?.(parsed.data);
  }

  /** Log a dropped line: the first hundred, then one at each power of ten, with the count. */
  #drop(message: string): void {
    const n = ++this.#dropped;
    if (n <= 100) return this.#log(message);
    if (/^10+$/.test(String(n))) this.#log(`${message} (${n} lines dropped so far; only some are logged)`);
  }

  #reply(id: Id, code: number, message: string, data?: Record<string, unknown>): void {
    void this.send({ jsonrpc: '2.0', id, error: { code, message, ...(data ? { data } : {}) } } as unknown as JSONRPCMessage);
  }
}

const lastBytes = (b: Buffer) => (b.length > KEEP ? b.subarray(b.length - KEEP) : b);

const ID_VALUE = String.raw`(-?\d{1,15}|"(?:[^"\\]|\\.){0,200}")`;
/** `"id"` as the first member (after "jsonrpc"), as a hand-written request has it. */
const ID_FIRST = new RegExp(String.raw`^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*${ID_VALUE}\s*,`);
/** `"id"` as the last member of the outer object, as the SDK's client writes it. */
const ID_LAST = new RegExp(String.raw`,\s*"id"\s*:\s*${ID_VALUE}\s*\}\s*$`);

/**
 * The request id of a line too long to parse, from its start or its end; null when it seems a
 * request whose id cannot be read; undefined for a notification (no id to answer).
 */
function idOf(head: Buffer, tail: Buffer): Id | undefined {
  const found = ID_FIRST.exec(head.toString('utf8'))?.[1] ?? ID_LAST.exec(tail.toString('utf8'))?.[1];
  if (found !== undefined) {
    try {
      return JSON.parse(found) as string | number;
    } catch {
      return null;
    }
  }
  return /"method"\s*:\s*"notifications\//.test(head.toString('utf8')) ? undefined : null;
}
