// POST /execute and every other endpoint against a real server on
// 127.0.0.1:0, recording in a temp SQLite store: good requests, and the bad
// ones a client (or an attacker) sends.
import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteStore } from '@corral/node';
import { EXAMPLE_DIFF, SLOW_MS, execute, metric, parsePrometheus, send, startTestServer, type TestServer } from './helpers.js';

const example = JSON.parse(readFileSync(EXAMPLE_DIFF, 'utf8')) as { diff: string };
const MAX_BODY = 64 * 1024;

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ maxBodyBytes: MAX_BODY });
});
afterAll(async () => {
  await t?.stop();
});

/** The recorded snapshot of a call, read back from the server's SQLite file by a second connection. */
async function recorded(id: string) {
  const store = await SqliteStore.open(t.storePath);
  try {
    return await store.getExecution(id);
  } finally {
    await store.close();
  }
}

describe('POST /execute', () => {
  it('runs diff-summary on the example diff, answers the envelope, and the call is in the snapshot store', async () => {
    const r = await execute(t.url, { tool: 'diff-summary', input: example });
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(r.json).toMatchObject({ ok: true, tool: 'diff-summary', version: '1.1.0', error: null, exit_code: 0 });
    expect(r.json.output.files.length).toBeGreaterThan(0);
    expect(r.json.output.summary).toMatch(/files? changed/);
    const snapshot = await recorded(r.json.snapshot.id);
    expect(snapshot).toMatchObject({ status: 'ok', tool: 'diff-summary', version: '1.1.0', error_code: null });
    expect(JSON.parse(snapshot!.input_json!)).toEqual(example);
  });

  it('POST /execute/{name} is the same call with the tool in the path', async () => {
    const r = await send(t.url, '/execute/diff-summary', { json: { input: example, timeout_ms: 5000 } });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ ok: true, tool: 'diff-summary' });
    // A range, percent-encoded.
    const ranged = await send(t.url, `/execute/${encodeURIComponent('diff-summary@^1')}`, { json: { input: { diff: '' } } });
    expect(ranged.status).toBe(200);
    expect(ranged.json.version).toBe('1.1.0');
    const named = await execute(t.url, { tool: 'diff-summary@^1', input: { diff: '' } });
    expect(named.status).toBe(200);
  });

  it('an unknown tool is 404 with the E_TOOL_NOT_FOUND envelope, and the attempt is recorded', async () => {
    for (const r of [
      await execute(t.url, { tool: 'no-such-tool', input: {} }),
      await send(t.url, '/execute/no-such-tool', { json: { input: {} } }),
      await execute(t.url, { tool: 'diff-summary@^2', input: { diff: '' } }),
    ]) {
      expect(r.status).toBe(404);
      expect(r.json).toMatchObject({ ok: false, version: null, error: { code: 'E_TOOL_NOT_FOUND' } });
      expect(await recorded(r.json.snapshot.id)).toMatchObject({ status: 'failed', error_code: 'E_TOOL_NOT_FOUND' });
    }
  });

  it("input that fails the tool's input_schema is 422 with the E_INPUT_VALIDATION envelope, recorded", async () => {
    const r = await execute(t.url, { tool: 'diff-summary', input: { diff: 5 } });
    expect(r.status).toBe(422);
    expect(r.json).toMatchObject({ ok: false, tool: 'diff-summary', version: '1.1.0', error: { code: 'E_INPUT_VALIDATION' } });
    expect(r.json.error.details.problems).toEqual([expect.objectContaining({ path: '/diff' })]);
    expect(await recorded(r.json.snapshot.id)).toMatchObject({ status: 'failed', error_code: 'E_INPUT_VALIDATION' });
  });

  it('a tool that fails in its sandbox is still 200, ok false, with the classified error', async () => {
    const r = await execute(t.url, { tool: 'spin', input: {}, timeout_ms: 200 });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ ok: false, error: { code: 'E_RESOURCE_EXHAUSTED', details: { resource: 'time' } } });
  });

  it('bad JSON, bad UTF-8 and a wrong body shape are 400 with { error } and every problem by JSON pointer', async () => {
    const notJson = await send(t.url, '/execute', { body: '{"tool": "diff-summary", ', headers: { 'content-type': 'application/json' } });
    expect(notJson.status).toBe(400);
    expect(notJson.json.error).toMatchObject({ code: 'E_INPUT_VALIDATION', details: { reason: 'body_not_json' }, retryable: false });
    expect(notJson.json.error.message).toMatch(/not valid JSON/);

    const notUtf8 = await send(t.url, '/execute', {
      body: Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
      headers: { 'content-type': 'application/json' },
    });
    expect(notUtf8.status).toBe(400);
    expect(notUtf8.json.error.details.reason).toBe('body_not_utf8');

    const cases: Array<[unknown, string[]]> = [
      [[1, 2], ['/']],
      ['diff-summary', ['/']],
      [null, ['/']],
      [{ input: {} }, ['/tool']],
      [{ tool: 'diff-summary' }, ['/input']],
      [{ tool: 7, input: {} }, ['/tool']],
      [{ tool: '', input: {} }, ['/tool']],
      [{ tool: 'x'.repeat(300), input: {} }, ['/tool']],
      [{ tool: 'diff\u001b[2J', input: {} }, ['/tool']],
      [{ tool: 'diff-summary', input: {}, timeout_ms: 0 }, ['/timeout_ms']],
      [{ tool: 'diff-summary', input: {}, timeout_ms: 1.5 }, ['/timeout_ms']],
      [{ tool: 'diff-summary', input: {}, timeout_ms: '100' }, ['/timeout_ms']],
      [{ tool: 'diff-summary', input: {}, timeout_ms: 1e300 }, ['/timeout_ms']],
      // diff-summary's own limit is 10 s: a call may shorten it, not lengthen it.
      [{ tool: 'diff-summary', input: { diff: '' }, timeout_ms: 10_001 }, ['/timeout_ms']],
      // HTTP passes no env; mounts map guest mounts to host folders (the policy then decides), strictly shaped.
      [{ tool: 'diff-summary', input: {}, mounts: [{ guest: '/', hostPath: '/' }], env: {} }, ['/', '/mounts']],
      [{ tool: 'file-stats', input: {}, mounts: null }, ['/mounts']],
      [{ tool: 'file-stats', input: {}, mounts: { workspace: '/tmp' } }, ['/mounts/workspace']],
      [{ tool: 'file-stats', input: {}, mounts: { '/workspace/../etc': '/tmp' } }, ['/mounts/~1workspace~1..~1etc']],
      [{ tool: 'file-stats', input: {}, mounts: { '/workspace': 'tmp' } }, ['/mounts/~1workspace']],
      [{ tool: 'file-stats', input: {}, mounts: { '/workspace': '/tmp\u0000x' } }, ['/mounts/~1workspace']],
      [{ tool: 'file-stats', input: {}, mounts: { '/workspace': `/${'x'.repeat(5000)}` } }, ['/mounts/~1workspace']],
      [{ tool: 'file-stats', input: {}, mounts: { '/workspace': 7 } }, ['/mounts/~1workspace']],
      [{ tool: 'file-stats', input: {}, mounts: { '/workspace': { folder: '/tmp', access: 'write' } } }, ['/mounts/~1workspace/access']],
      [
        { tool: 'file-stats', input: {}, mounts: { '/workspace': { path: '/tmp' } } },
        ['/mounts/~1workspace', '/mounts/~1workspace/folder'],
      ],
      [
        { tool: 'file-stats', input: {}, mounts: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`/m${i}`, '/tmp'])) },
        ['/mounts'],
      ],
      [JSON.parse('{"tool": "file-stats", "input": {}, "mounts": {"__proto__": "/tmp"}}'), ['/mounts/__proto__']],
      [JSON.parse('{"tool": "diff-summary", "input": {}, "__proto__": {"x": 1}}'), ['/']],
    ];
    for (const [body, paths] of cases) {
      const r = await send(t.url, '/execute', { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
      expect(r.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(r.json.error.code).toBe('E_INPUT_VALIDATION');
      expect(r.json.error.details.problems.map((p: { path: string }) => p.path)).toEqual(paths);
    }
    const extra = await send(t.url, '/execute/diff-summary', { json: { tool: 'diff-summary', input: {} } });
    expect(extra.status).toBe(400);
    expect(extra.json.error.message).toMatch(/unknown key "tool"/);
  });

  it('a body over the limit is 413 before it is read: declared by Content-Length or sent chunked', async () => {
    const chunk = new Uint8Array(64 * 1024).fill(0x20);
    // 64 MiB declared: the answer comes as soon as the headers are in.
    let responded = false;
    const declared = await new Promise<{ status: number; body: string; bodyFinished: boolean }>((resolve, reject) => {
      const req = httpRequest(
        `${t.url}/execute`,
        { method: 'POST', agent: false, headers: { 'content-type': 'application/json', 'content-length': 64 * 2 ** 20 } },
        (res) => {
          responded = true;
          let body = '';
          res.on('data', (c: Buffer) => (body += c));
          res.on('end', () => resolve({ status: res.statusCode!, body, bodyFinished: req.writableFinished }));
        },
      );
      req.on('error', (err) => (responded ? undefined : reject(err)));
      let sent = 0;
      const next = () => {
        while (!responded && sent < 64 * 2 ** 20 && !req.destroyed) {
          sent += chunk.length;
          if (!req.write(chunk)) return void req.once('drain', next);
        }
      };
      next();
    });
    expect(declared.status).toBe(413);
    expect(declared.bodyFinished).toBe(false);
    expect(JSON.parse(declared.body).error).toMatchObject({
      code: 'E_INPUT_VALIDATION',
      details: { reason: 'body_too_large', max_body_bytes: MAX_BODY },
    });

    // Chunked, no length: refused once the limit is passed.
    const chunked = await send(t.url, '/execute', {
      body: Array.from({ length: 8 }, () => chunk),
      headers: { 'content-type': 'application/json' },
    });
    expect(chunked.status).toBe(413);
    expect(chunked.headers.connection).toBe('close');
    expect(chunked.json.error.details.reason).toBe('body_too_large');

    // Just under the limit is read and run (diff-summary refuses text without a file header).
    const under = await send(t.url, '/execute', {
      json: { tool: 'diff-summary', input: { diff: 'x'.repeat(MAX_BODY - 100) } },
    });
    expect(under.status).toBe(200);
    expect(under.json).toMatchObject({ ok: false, error: { code: 'E_UNEXPECTED_EXIT' } });
  });

  it('a body not declared as application/json is 415', async () => {
    for (const type of [undefined, 'text/plain', 'application/x-www-form-urlencoded', 'application/json; charset=latin1']) {
      const r = await send(t.url, '/execute', {
        body: JSON.stringify({ tool: 'diff-summary', input: { diff: '' } }),
        headers: type ? { 'content-type': type } : {},
      });
      expect(r.status, String(type)).toBe(415);
      expect(r.json.error).toMatchObject({ code: 'E_INPUT_VALIDATION', details: { reason: 'unsupported_media_type' } });
    }
    const ok = await send(t.url, '/execute', {
      body: JSON.stringify({ tool: 'diff-summary', input: { diff: '' } }),
      headers: { 'content-type': 'Application/JSON; charset="UTF-8"' },
    });
    expect(ok.status).toBe(200);
  });
});

describe('the other endpoints', () => {
  it('GET /tools lists every tool with its contract, and no host paths', async () => {
    const r = await send(t.url, '/tools');
    expect(r.status).toBe(200);
    const names = r.json.tools.map((tool: { name: string }) => tool.name);
    expect(names).toEqual([...names].sort());
    expect(names).toEqual(expect.arrayContaining(['diff-summary', 'file-stats', 'slow', 'spin', 'echo']));
    const diff = r.json.tools.find((tool: { name: string }) => tool.name === 'diff-summary');
    expect(diff).toMatchObject({ version: '1.1.0', kind: 'component', resources: { timeout_ms: 10_000 } });
    expect(diff.input_schema.required).toEqual(['diff']);
    expect(diff.output_schema.required).toEqual(['files', 'totals', 'summary']);
    expect(diff.wasm_sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(r.text).not.toContain('/wasm-tools/');
  });

  it('GET /healthz; HEAD answers headers only', async () => {
    const r = await send(t.url, '/healthz');
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ status: 'ok' });
    const head = await send(t.url, '/tools', { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.text).toBe('');
    expect(Number(head.headers['content-length'])).toBeGreaterThan(100);
  });

  it('a wrong method is 405 with Allow', async () => {
    for (const [method, path, allow] of [
      ['GET', '/execute', 'POST'],
      ['PUT', '/execute/diff-summary', 'POST'],
      ['POST', '/tools', 'GET, HEAD'],
      ['DELETE', '/healthz', 'GET, HEAD'],
      ['POST', '/openapi.json', 'GET, HEAD'],
      ['OPTIONS', '/metrics', 'GET, HEAD'],
    ] as const) {
      const r = await send(t.url, path, { method, ...(method === 'POST' || method === 'PUT' ? { json: {} } : {}) });
      expect(r.status, `${method} ${path}`).toBe(405);
      expect(r.headers.allow).toBe(allow);
      expect(r.json.error.code).toBe('E_METHOD_NOT_ALLOWED');
    }
  });

  it('an unknown path is 404 E_NOT_FOUND; paths match exactly', async () => {
    for (const path of [
      '/',
      '/nope',
      '/execute/',
      '/execute/diff-summary/x',
      '/tools/',
      '/TOOLS',
      '/execute/..%2Ftools',
      '//tools',
      '/mcp',
    ]) {
      const r = await send(t.url, path, path.startsWith('/execute') ? { json: { input: {} } } : {});
      expect(r.status, path).toBe(404);
      // A name in the path is only ever a tool name: '../tools' is a tool nobody registered.
      expect(r.json.error.code, path).toBe(path === '/execute/..%2Ftools' ? 'E_TOOL_NOT_FOUND' : 'E_NOT_FOUND');
    }
  });

  it('refuses a Host header that is not its own (DNS rebinding) on a loopback server', async () => {
    const evil = await send(t.url, '/tools', { headers: { host: 'evil.example:8787' } });
    expect(evil.status).toBe(403);
    expect(evil.json.error.code).toBe('E_FORBIDDEN');
    const rebound = await execute(t.url, { tool: 'diff-summary', input: { diff: '' } }, { host: 'attacker.test' });
    expect(rebound.status).toBe(403);
    for (const host of ['localhost:8787', '127.0.0.1', 'LOCALHOST', '[::1]:1']) {
      expect((await send(t.url, '/healthz', { headers: { host } })).status, host).toBe(200);
    }
  });

  it('logs one JSON line per request, with its id, and never a body', async () => {
    const secret = 'diff --git a/SECRET-IN-BODY b/SECRET-IN-BODY';
    const r = await execute(t.url, { tool: 'diff-summary', input: { diff: secret } }, { 'x-request-id': 'req-42' });
    expect(r.headers['x-request-id']).toBe('req-42');
    const hostile = await send(t.url, '/healthz', { headers: { 'x-request-id': 'a"b x' } });
    expect(hostile.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const line = t.logs.find((entry) => entry.request_id === 'req-42');
    expect(line).toMatchObject({ event: 'request', method: 'POST', path: '/execute', tool: 'diff-summary', status: expect.any(Number) });
    expect(line).toHaveProperty('duration_ms');
    expect(line).toHaveProperty('snapshot_id', r.json.snapshot.id);
    expect(line!.status).toBe(r.status);
    expect(r.json.ok).toBe(true);
    expect(line).not.toHaveProperty('error_code');
    const failed = t.logs.find((entry) => entry.event === 'request' && entry.status === 422);
    expect(failed).toMatchObject({ tool: 'diff-summary', error_code: 'E_INPUT_VALIDATION' });
    expect(JSON.stringify(t.logs)).not.toContain('SECRET-IN-BODY');
    for (const entry of t.logs) expect(typeof entry.time).toBe('string');
  });
});

describe('limits', () => {
  it('more calls than --concurrency get 503 with Retry-After; the admitted one finishes', async () => {
    const s = await startTestServer({ concurrency: 1 });
    try {
      const slow = execute(s.url, { tool: 'slow', input: {} });
      await waitFor(async () => metric(parsePrometheus((await send(s.url, '/metrics')).text), 'corral_http_inflight_calls') === 1);
      const refused = await execute(s.url, { tool: 'diff-summary', input: { diff: '' } });
      expect(refused.status).toBe(503);
      expect(refused.headers['retry-after']).toBe('1');
      expect(refused.json.error).toMatchObject({
        code: 'E_RESOURCE_EXHAUSTED',
        retryable: true,
        details: { resource: 'http_concurrency', concurrency: 1 },
      });
      expect((await slow).json).toMatchObject({ ok: true, output: { slept: true } });
      expect((await execute(s.url, { tool: 'diff-summary', input: { diff: '' } })).status).toBe(200);
    } finally {
      await s.stop();
    }
  });

  it('a client that leaves cancels its call, which is recorded as E_CANCELLED', async () => {
    const controller = new AbortController();
    const gone = send(t.url, '/execute', { json: { tool: 'slow', input: {} }, signal: controller.signal }).catch((err: Error) => err);
    await waitFor(() => t.corral.executor.pool.running > 0);
    controller.abort();
    expect(await gone).toBeInstanceOf(Error);
    await waitFor(() => t.logs.some((e) => e.event === 'request' && e.status === 499 && e.tool === 'slow'));
    // Well before the tool would have answered by itself.
    await waitFor(async () => (await cancelledSlowCalls()) === 1, SLOW_MS / 2);
  });
});

async function cancelledSlowCalls(): Promise<number> {
  const store = await SqliteStore.open(t.storePath);
  try {
    return (await store.listExecutions({ tool: 'slow', errorCode: 'E_CANCELLED' })).length;
  } finally {
    await store.close();
  }
}

describe('GET /metrics', () => {
  it('is Prometheus text that counts the calls made, errors by code, latency, queue and restarts', async () => {
    const s = await startTestServer();
    try {
      for (let i = 0; i < 3; i++) expect((await execute(s.url, { tool: 'diff-summary', input: example })).status).toBe(200);
      expect((await execute(s.url, { tool: 'diff-summary', input: { diff: 1 } })).status).toBe(422);
      expect((await execute(s.url, { tool: 'nope', input: {} })).status).toBe(404);
      expect((await execute(s.url, { tool: 'spin', input: {}, timeout_ms: 100 })).json.error.code).toBe('E_RESOURCE_EXHAUSTED');
      expect((await send(s.url, '/execute', { body: '{', headers: { 'content-type': 'application/json' } })).status).toBe(400);
      const r = await send(s.url, '/metrics');
      expect(r.status).toBe(200);
      expect(r.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
      const samples = parsePrometheus(r.text);
      expect(metric(samples, 'corral_calls_total', { tool: 'diff-summary', outcome: 'ok' })).toBe(3);
      expect(metric(samples, 'corral_calls_total', { tool: 'diff-summary', outcome: 'error' })).toBe(1);
      expect(metric(samples, 'corral_calls_total', { tool: '_unknown', outcome: 'error' })).toBe(1);
      expect(metric(samples, 'corral_call_errors_total', { tool: 'diff-summary', code: 'E_INPUT_VALIDATION' })).toBe(1);
      expect(metric(samples, 'corral_call_errors_total', { tool: '_unknown', code: 'E_TOOL_NOT_FOUND' })).toBe(1);
      expect(metric(samples, 'corral_call_errors_total', { tool: 'spin', code: 'E_RESOURCE_EXHAUSTED' })).toBe(1);
      expect(metric(samples, 'corral_http_errors_total', { code: 'E_INPUT_VALIDATION' })).toBe(1);
      expect(metric(samples, 'corral_call_duration_seconds_count', { tool: 'diff-summary', outcome: 'ok' })).toBe(3);
      expect(metric(samples, 'corral_call_duration_seconds_bucket', { tool: 'diff-summary', outcome: 'ok', le: '+Inf' })).toBe(3);
      expect(metric(samples, 'corral_http_requests_total', { method: 'POST', route: '/execute', status: '200' })).toBe(4);
      expect(metric(samples, 'corral_http_requests_total', { method: 'POST', route: '/execute', status: '400' })).toBe(1);
      // The spin call timed out: its worker was replaced.
      expect(metric(samples, 'corral_worker_restarts_total')).toBe(1);
      expect(metric(samples, 'corral_queue_depth')).toBe(0);
      expect(metric(samples, 'corral_workers')).toBeGreaterThan(0);
      expect(samples.some((x) => x.name === 'corral_calls_running')).toBe(true);
      expect(samples.some((x) => x.name === 'process_cpu_user_seconds_total')).toBe(true);
    } finally {
      await s.stop();
    }
  });

  it('labels never take a value from the request beyond bounded sets', async () => {
    const s = await startTestServer();
    try {
      await execute(s.url, { tool: 'made-up-name-1', input: {} });
      await send(s.url, '/made/up/path/2');
      const text = (await send(s.url, '/metrics')).text;
      expect(text).not.toContain('made-up');
      expect(metric(parsePrometheus(text), 'corral_http_requests_total', { route: 'other', status: '404' })).toBe(1);
    } finally {
      await s.stop();
    }
  });
});

async function waitFor(check: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
