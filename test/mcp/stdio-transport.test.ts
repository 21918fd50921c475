// LineStdioTransport (corral mcp's stdio) against a client that does not read its answers, floods it with
// lines, or closes stdin while a call runs.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { LineStdioTransport } from '../../packages/node/dist/server/mcp-stdio.js';
import { CLI } from './helpers.js';

/** A stdout whose reader takes nothing until told to. */
function stalledStdout() {
  const parked: (() => void)[] = [];
  let flowing = false;
  let written = '';
  const stream = new Writable({
    highWaterMark: 1024,
    write(chunk: Buffer, _enc, done) {
      written += chunk.toString('utf8');
      if (flowing) done();
      else parked.push(done);
    },
  });
  return {
    stream,
    lines: () => written.split('\n').filter((l) => l !== ''),
    flow() {
      flowing = true;
      for (const done of parked.splice(0)) done();
    },
  };
}

describe('LineStdioTransport', () => {
  // Each line was read and answered however backed up stdout was: 2 bytes in ("x\n") cost hundreds of
  // bytes of queued answers, so a client that sent lines and never read grew corral mcp without bound.
  it('stops reading while stdout is backed up, and answers every line once it drains', async () => {
    const stdin = new PassThrough();
    const stdout = stalledStdout();
    const logged: string[] = [];
    const transport = new LineStdioTransport(stdin, stdout.stream, { log: (m) => logged.push(m) });
    await transport.start();
    stdin.write('x\n'.repeat(5000));
    await new Promise((r) => setImmediate(r));
    expect(stdout.stream.writableLength).toBeLessThan(4096);
    expect(stdout.lines().length).toBeLessThan(100);
    stdout.flow();
    await new Promise((r) => setImmediate(r));
    for (let i = 0; i < 100 && stdout.lines().length < 5000; i++) await new Promise((r) => setTimeout(r, 10));
    expect(stdout.lines()).toHaveLength(5000);
    expect(new Set(stdout.lines()).size).toBe(1);
    expect(JSON.parse(stdout.lines()[0]!)).toMatchObject({ id: null, error: { code: -32700 } });
    // A flood of bad lines is counted, not logged line by line (stderr is often not read either).
    expect(logged.length).toBeLessThanOrEqual(102);
    expect(logged.at(-1)).toMatch(/1000 lines dropped so far/);
    await transport.close();
  });

  it('idle() waits for every request read to be answered, or cancelled', async () => {
    const stdin = new PassThrough();
    const stdout = stalledStdout();
    stdout.flow();
    const transport = new LineStdioTransport(stdin, stdout.stream);
    transport.onmessage = () => {};
    await transport.start();
    stdin.write('{"jsonrpc":"2.0","id":1,"method":"ping"}\n{"jsonrpc":"2.0","id":2,"method":"ping"}\n');
    let idle = false;
    void transport.idle().then(() => (idle = true));
    await transport.send({ jsonrpc: '2.0', id: 1, result: {} });
    await new Promise((r) => setImmediate(r));
    expect(idle).toBe(false);
    stdin.write('{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}\n');
    await new Promise((r) => setImmediate(r));
    expect(idle).toBe(true);
    await transport.close();
  });
});

// A client that sent its last call and closed stdin (a pipeline, or one that half-closes) lost the
// answer: corral mcp stopped at the end of stdin, with the call in flight, and exited 0.
describe('corral mcp when stdin closes during a call', () => {
  it('answers the call, then exits 0', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'corral-mcp-eof-'));
    try {
      const child = spawn(process.execPath, [CLI, 'mcp', '--no-store', '--no-watch'], {
        cwd: dir,
        env: { ...process.env, CORRAL_POLICY: join(dir, 'policy.yaml') },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
      child.stderr.resume();
      const lines = [
        {
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
        },
        { jsonrpc: '2.0', method: 'notifications/initialized' },
        { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'diff-summary', arguments: { diff: '' } } },
      ];
      child.stdin.end(lines.map((l) => `${JSON.stringify(l)}\n`).join(''));
      const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
      expect(code).toBe(0);
      const answers = out
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as { id?: number; result?: { isError?: boolean; structuredContent?: unknown } });
      expect(answers.map((a) => a.id)).toEqual([1, 2]);
      expect(answers[1]!.result?.isError).toBeFalsy();
      expect(answers[1]!.result?.structuredContent).toMatchObject({ files: [] });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
