// The fleet's message encoding: what one end writes the other reads back
// exactly, and what a hostile publisher writes is refused with a reason,
// never crashes the reader or reaches past the message's own bytes.
import { describe, expect, it } from 'vitest';
import { MalformedMessage, decodeCall, decodeReply, encodeCall, encodeReply, type CallMessage } from '@corral/fleet';

const enc = new TextEncoder();

function call(over: Partial<CallMessage> = {}): CallMessage {
  return {
    tool: 'diff-summary',
    version: '1.2.3',
    wasm_sha256: 'a'.repeat(64),
    stdin: enc.encode('{"diff":""}'),
    args: ['--x'],
    env: { TZ: 'UTC' },
    mounts: [
      {
        guest: '/workspace',
        access: 'read-write',
        tree: { 'a.txt': enc.encode('A'), sub: { 'b.bin': new Uint8Array([0, 255]) }, empty: {} },
      },
    ],
    timeout_ms: 1000,
    output_limit_bytes: 1 << 20,
    memory_limit_bytes: 64 << 20,
    disk_limit_bytes: 1 << 20,
    sent_ms: 1_700_000_000_000,
    wait_ms: 31_000,
    ...over,
  };
}

/** Re-frame a call with its metadata changed, keeping its byte strings. */
function withMeta(bytes: Uint8Array, change: (meta: Record<string, unknown>) => void, text = (json: string) => json): Uint8Array {
  const len = new DataView(bytes.buffer, bytes.byteOffset).getUint32(4);
  const meta = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + len)));
  change(meta);
  const json = enc.encode(text(JSON.stringify(meta)));
  const rest = bytes.subarray(8 + len);
  const out = new Uint8Array(8 + json.length + rest.length);
  out.set(bytes.subarray(0, 4));
  new DataView(out.buffer).setUint32(4, json.length);
  out.set(json, 8);
  out.set(rest, 8 + json.length);
  return out;
}

describe('the call encoding', () => {
  it('reads back what it wrote, a string file as its UTF-8 bytes', () => {
    const c = call();
    c.mounts[0]!.tree['s.txt'] = 'héllo';
    const back = decodeCall(encodeCall(c));
    expect(back).toEqual({ ...c, mounts: [{ ...c.mounts[0], tree: { ...c.mounts[0]!.tree, 's.txt': enc.encode('héllo') } }] });
  });

  // A call's stdin is moved to a sandbox worker, buffer and all. Read from a Buffer holding other
  // messages too (one socket read), a view into it took them along: the next call decoded from it
  // found it empty, and one already decoded was never delivered.
  it('gives each byte string a buffer of its own, even when the message is a view into a larger one', () => {
    const message = encodeCall(call());
    const socketRead = Buffer.concat([Buffer.from('other message before'), message, Buffer.from('and after')]);
    const view = socketRead.subarray(20, 20 + message.length);
    const back = decodeCall(view);
    expect(back.stdin).toEqual(call().stdin);
    expect(back.stdin.byteOffset).toBe(0);
    expect(back.stdin.buffer.byteLength).toBe(back.stdin.byteLength);
    structuredClone(back.stdin.buffer, { transfer: [back.stdin.buffer] });
    expect(socketRead.byteLength).toBeGreaterThan(message.length);
    expect(decodeCall(view).stdin).toEqual(call().stdin);
  });

  it('keeps a file named __proto__ a file', () => {
    const back = decodeCall(encodeCall(call({ mounts: [{ guest: '/w', access: 'read', tree: JSON.parse('{"__proto__": {"x": "y"}}') }] })));
    expect(Object.keys(back.mounts[0]!.tree)).toEqual(['__proto__']);
    expect(Object.getPrototypeOf(back.mounts[0]!.tree)).toBe(null);
  });

  const bad: [string, (b: Uint8Array) => Uint8Array, RegExp][] = [
    ['empty', () => new Uint8Array(0), /shorter than its header/],
    ['another format version', (b) => Uint8Array.from([...b.subarray(0, 3), 2, ...b.subarray(4)]), /format version 2/],
    ['not Corral at all', () => enc.encode('GET / HTTP/1.1\r\n\r\n'), /not a Corral fleet message/],
    [
      'metadata longer than the message',
      (b) => Uint8Array.from([...b.subarray(0, 4), 0xff, 0xff, 0xff, 0x00, ...b.subarray(8)]),
      /past its end/,
    ],
    ['cut short', (b) => b.subarray(0, b.length - 1), /run past its end/],
    ['bytes after the last byte string', (b) => Uint8Array.from([...b, 1]), /after its last byte string/],
    ['a tool name with a wildcard', (b) => withMeta(b, (m) => (m.tool = 'a.>')), /tool is not a tool name/],
    [
      'a file name with a slash',
      (b) => withMeta(b, (m) => ((m.mounts as { tree: Record<string, unknown> }[])[0]!.tree = { '../x': 1 })),
      /file name/,
    ],
    [
      'a file pointing at stdin',
      (b) => withMeta(b, (m) => ((m.mounts as { tree: Record<string, unknown> }[])[0]!.tree = { x: 0, y: 1, z: 2 })),
      /not there/,
    ],
    [
      'a byte string nothing refers to',
      (b) => withMeta(b, (m) => ((m.mounts as { tree: Record<string, unknown> }[])[0]!.tree = {})),
      /nothing refers to/,
    ],
    ['a negative time limit', (b) => withMeta(b, (m) => (m.timeout_ms = -1)), /timeout_ms/],
    ['env values that are not strings', (b) => withMeta(b, (m) => (m.env = { A: 1 })), /env/],
    ['a million args', (b) => withMeta(b, (m) => (m.args = Array(1_000_000).fill(''))), /args/],
  ];
  for (const [what, make, message] of bad) {
    it(`refuses ${what}`, () => {
      let thrown: unknown;
      try {
        decodeCall(make(encodeCall(call())));
      } catch (err) {
        thrown = err;
      }
      expect(thrown).toBeInstanceOf(MalformedMessage);
      expect((thrown as Error).message).toMatch(message);
    });
  }

  it('refuses folders nested past its depth limit without overflowing the stack', () => {
    const deep = `${'{"d":'.repeat(100_000)}{"f":1}${'}'.repeat(100_000)}`;
    const message = withMeta(
      encodeCall(call({ mounts: [{ guest: '/w', access: 'read', tree: { f: enc.encode('x') } }] })),
      (m) => {
        (m.mounts as { tree: unknown }[])[0]!.tree = 'DEEP';
      },
      (json) => json.replace('"DEEP"', deep),
    );
    expect(() => decodeCall(message)).toThrow(MalformedMessage);
  });
});

describe('the reply encoding', () => {
  it('reads back a result and an error', () => {
    const result = {
      exitCode: 3,
      exited: true,
      stdout: enc.encode('out'),
      stderr: enc.encode('err'),
      durationMs: 12.5,
      peakMemoryBytes: 65536,
    };
    expect(decodeReply(encodeReply({ kind: 'result', result }), 1024)).toEqual({ kind: 'result', result });
    const error = { code: 'E_CANCELLED' as const, message: 'stop', details: { cancelled: true as const }, retryable: false };
    expect(decodeReply(encodeReply({ kind: 'error', error }), 1024)).toEqual({ kind: 'error', error });
  });

  it("refuses stdout larger than the call's output limit, and an error that is not Corral's", () => {
    const result = { exitCode: 0, stdout: new Uint8Array(2048), stderr: new Uint8Array(0), durationMs: 1 };
    expect(() => decodeReply(encodeReply({ kind: 'result', result }), 1024)).toThrow(/output limit \(1024 bytes\)/);
    const error = { code: 'E_MADE_UP', message: 'x', details: {}, retryable: false };
    expect(() => decodeReply(encodeReply({ kind: 'error', error: error as never }), 1024)).toThrow(/not a Corral error/);
  });
});
