// `corral serve` as a real subprocess: graceful shutdown with a call in
// flight, refusing to listen beyond loopback without a token, the token
// file, and misuse.
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SqliteStore } from '@corral/node';
import { SLOW_MS, execute, metric, parsePrometheus, send, serve, serveFails, slowToolDir } from './helpers.js';

describe('corral serve', () => {
  it('SIGTERM: stops accepting, finishes the call in flight, closes the store, exits 0', async () => {
    const store = join(mkdtempSync(join(tmpdir(), 'corral-serve-')), 'snapshots.db');
    const tools = dirname(await slowToolDir());
    const s = await serve(['--tools', tools, '--store', store, '--workers', '1']);
    try {
      expect((await send(s.url, '/healthz')).json).toEqual({ status: 'ok' });
      const started = Date.now();
      const call = execute(s.url, { tool: 'slow', input: {} });
      // Wait until the call is running, then ask the server to stop.
      for (let i = 0; ; i++) {
        const samples = parsePrometheus((await send(s.url, '/metrics')).text);
        if (metric(samples, 'corral_calls_running') === 1) break;
        if (i > 500) throw new Error('the slow call never started');
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      s.child.kill('SIGTERM');
      const answer = await call;
      expect(answer.status).toBe(200);
      expect(answer.json).toMatchObject({ ok: true, tool: 'slow', output: { slept: true } });
      expect(Date.now() - started).toBeGreaterThanOrEqual(SLOW_MS - 50);
      expect(await s.exited).toBe(0);
      // Nothing listens any more.
      await expect(send(s.url, '/healthz')).rejects.toThrow(/ECONNREFUSED/);
      const lines = s
        .stderr()
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(lines.map((l) => l.event)).toEqual(expect.arrayContaining(['listening', 'draining', 'closed']));
      expect(lines.find((l) => l.event === 'request' && l.tool === 'slow')).toMatchObject({ status: 200, method: 'POST' });
      // The call is in the store, whole, and the store was closed cleanly.
      const db = await SqliteStore.open(store);
      try {
        expect(await db.getExecution(answer.json.snapshot.id)).toMatchObject({ status: 'ok', tool: 'slow' });
      } finally {
        await db.close();
      }
    } finally {
      s.child.kill('SIGKILL');
    }
  });

  it('a call that outlives --shutdown-timeout is stopped and still answered (503 E_CANCELLED); exit 0', async () => {
    const tools = dirname(await slowToolDir());
    const s = await serve(['--tools', tools, '--no-store', '--shutdown-timeout', '200', '--quiet']);
    try {
      const call = execute(s.url, { tool: 'slow', input: {} });
      for (let i = 0; metric(parsePrometheus((await send(s.url, '/metrics')).text), 'corral_calls_running') !== 1; i++) {
        if (i > 500) throw new Error('the slow call never started');
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      s.child.kill('SIGTERM');
      const answer = await call;
      expect(answer.status).toBe(503);
      expect(answer.json).toMatchObject({ ok: false, error: { code: 'E_CANCELLED' } });
      expect(answer.json.error.message).toMatch(/shutting down/);
      expect(await s.exited).toBe(0);
      // --quiet: no request log; what stays is the one notice --no-store earns (approvals live in memory).
      expect(s.stderr().trim().split('\n')).toEqual([
        expect.stringMatching(/"event":"notice".*--no-store: approvals and the audit trail are kept in memory/),
      ]);
    } finally {
      s.child.kill('SIGKILL');
    }
  });

  it('fetch() sending a body over --max-body-mb reads the 413 and its reason, not a reset connection', async () => {
    // fetch (undici) goes on writing the body after the answer came: a socket closed outright made it fail with EPIPE.
    const s = await serve(['--no-store', '--quiet', '--max-body-mb', '1', '--mcp']);
    try {
      const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
      for (const [path, size] of [
        ['/execute', 3 * 2 ** 20],
        ['/execute', 20 * 2 ** 20],
        ['/mcp', 3 * 2 ** 20],
      ] as const) {
        const r = await fetch(`${s.url}${path}`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ tool: 'diff-summary', input: { diff: 'x'.repeat(size) } }),
        });
        expect(r.status, `${path} ${size}`).toBe(413);
        expect(r.headers.get('connection')).toBe('close');
        expect(((await r.json()) as { error: { details: { reason: string } } }).error.details.reason).toBe('body_too_large');
      }
      // Streamed, with no length: refused once past the limit, and read as such.
      const chunk = new Uint8Array(256 * 1024).fill(0x20);
      let n = 0;
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (n++ < 16) controller.enqueue(chunk);
          else controller.close();
        },
      });
      const streamed = await fetch(`${s.url}/execute`, { method: 'POST', headers, body, duplex: 'half' } as RequestInit);
      expect(streamed.status).toBe(413);
      expect((await fetch(`${s.url}/healthz`)).status).toBe(200);
    } finally {
      s.child.kill('SIGTERM');
      expect(await s.exited).toBe(0);
    }
  });

  it('refuses to listen beyond loopback without a token (exit 2, says what to do)', async () => {
    const r = await serveFails(['--host', '0.0.0.0', '--no-store']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/refusing to serve on 0\.0\.0\.0 without a token.*--token-file FILE or CORRAL_TOKEN/);
  });

  it('--token-file (or CORRAL_TOKEN) makes every endpoint but /healthz need the token', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'corral-token-'));
    const file = join(dir, 'token');
    const token = 'file-token-0123456789abcdef';
    writeFileSync(file, `${token}\n`);
    chmodSync(file, 0o600);
    const s = await serve(['--token-file', file, '--no-store', '--quiet']);
    try {
      expect((await send(s.url, '/tools')).status).toBe(401);
      expect((await send(s.url, '/tools', { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
      expect((await send(s.url, '/healthz')).status).toBe(200);
    } finally {
      s.child.kill('SIGTERM');
      expect(await s.exited).toBe(0);
    }
    const fromEnv = await serve(['--no-store', '--quiet'], { CORRAL_TOKEN: token });
    try {
      expect((await send(fromEnv.url, '/tools')).status).toBe(401);
      expect((await send(fromEnv.url, '/tools', { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
    } finally {
      fromEnv.child.kill('SIGTERM');
      expect(await fromEnv.exited).toBe(0);
    }
  });

  it('a port in use is said as such, with what to do, and exits 1', async () => {
    const first = await serve(['--no-store', '--quiet']);
    try {
      const port = new URL(first.url).port;
      const second = await serveFails(['--no-store', '--quiet', '--port', port]);
      expect(second.code).toBe(1);
      expect(second.stderr).toMatch(new RegExp(`cannot listen on 127\\.0\\.0\\.1:${port}: the port is in use.*--port`));
      expect(second.stderr).not.toMatch(/internal error/);
    } finally {
      first.child.kill('SIGTERM');
      await first.exited;
    }
  });

  it('exits 2 on misuse', async () => {
    for (const args of [
      ['--port', 'http'],
      ['--concurrency', '0'],
      ['--max-body-mb', '-1'],
      ['--store', 'x.db', '--no-store'],
      ['--bogus'],
    ]) {
      const r = await serveFails(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(/^corral: /);
    }
    const short = await serveFails(['--no-store'], { CORRAL_TOKEN: 'short' });
    expect(short.code).toBe(2);
    expect(short.stderr).toMatch(/at least 16 characters/);
    const missing = await serveFails(['--token-file', '/nonexistent/token']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/cannot read --token-file/);
  });
});
