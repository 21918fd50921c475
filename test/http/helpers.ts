/**
 * What the HTTP tests share: a Corral with the bundled tools and a few
 * fixtures (a tool that sleeps, one that spins, one that echoes), a real
 * server on 127.0.0.1:0 with a temp SQLite store, and a raw HTTP client
 * (node:http, so a test controls every header and byte, Host included).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from '@bytecodealliance/jco';
import { Corral } from '@corral/node';
import { startHttpServer, type CorralHttpServer, type HttpLogEntry, type HttpServerOptions } from '@corral/node/http';
import { openPolicyGate } from '@corral/node/policy';

export const ROOT = new URL('../..', import.meta.url).pathname;
export const CLI = join(ROOT, 'packages/node/bin/corral.js');
export const FIXTURES = join(ROOT, 'test/fixtures/tools');
export const EXAMPLE_DIFF = join(ROOT, 'wasm-tools/diff-summary/examples/example.diff.json');

/** Milliseconds the `slow` fixture sleeps before it answers {"slept": true}. */
export const SLOW_MS = 1500;

/**
 * A folder holding the `slow` tool: a preview1 module that sleeps SLOW_MS
 * (poll_oneoff on the monotonic clock) and prints {"slept":true}.
 */
export async function slowToolDir(): Promise<string> {
  const wat = `(module
    (import "wasi_snapshot_preview1" "poll_oneoff" (func $poll (param i32 i32 i32 i32) (result i32)))
    (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
    (memory (export "memory") 1)
    (data (i32.const 512) "{\\"slept\\":true}\\n")
    (func (export "_start")
      ;; one clock subscription at 64: tag 0 (clock) at +8, clock id 1 (monotonic) at +16, timeout (ns) at +24
      (i32.store8 (i32.const 72) (i32.const 0))
      (i32.store (i32.const 80) (i32.const 1))
      (i64.store (i32.const 88) (i64.const ${SLOW_MS * 1_000_000}))
      (drop (call $poll (i32.const 64) (i32.const 256) (i32.const 1) (i32.const 320)))
      (i32.store (i32.const 0) (i32.const 512))
      (i32.store (i32.const 4) (i32.const 15))
      (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))))`;
  const dir = join(mkdtempSync(join(tmpdir(), 'corral-http-tools-')), 'slow');
  mkdirSync(dir);
  writeFileSync(join(dir, 'slow.wasm'), await parse(wat));
  writeFileSync(
    join(dir, 'tool-spec.json'),
    JSON.stringify({
      name: 'slow',
      version: '1.0.0',
      description: `Sleeps ${SLOW_MS} ms, then answers {"slept": true}`,
      kind: 'module',
      component: 'slow.wasm',
      input_schema: { type: 'object' },
      output_schema: { type: 'object', properties: { slept: { const: true } }, required: ['slept'] },
      resources: { memory_mb: 16, timeout_ms: 10_000 },
    }),
  );
  return dir;
}

export interface TestServer {
  corral: Corral;
  server: CorralHttpServer;
  url: string;
  storePath: string;
  logs: HttpLogEntry[];
  stop(): Promise<void>;
}

/**
 * A Corral (bundled tools, slow, spin, echo) recording in a fresh SQLite file (or `state.storePath`),
 * served on 127.0.0.1:0. With `state.policyPath`, its gate reads that policy file; else the test
 * run's own (CORRAL_POLICY, see vite.config.ts).
 */
export async function startTestServer(
  options: HttpServerOptions = {},
  extraToolDirs: string[] = [],
  state: { storePath?: string; policyPath?: string } = {},
): Promise<TestServer> {
  const storePath = state.storePath ?? join(mkdtempSync(join(tmpdir(), 'corral-http-store-')), 'snapshots.db');
  const corral = await Corral.create({
    size: 2,
    store: storePath,
    toolDirs: [await slowToolDir(), join(FIXTURES, 'spin'), join(FIXTURES, 'echo'), ...extraToolDirs],
  });
  const logs: HttpLogEntry[] = [];
  const gate = state.policyPath !== undefined ? openPolicyGate({ store: corral.store!, policyPath: state.policyPath }) : undefined;
  const server = await startHttpServer(corral, { port: 0, log: (entry) => logs.push(entry), ...(gate ? { gate } : {}), ...options });
  return {
    corral,
    server,
    url: server.url,
    storePath,
    logs,
    async stop() {
      await server.close({ timeoutMs: 1000 });
      await corral.close();
    },
  };
}

/** A `corral serve` subprocess started by `serve`. */
export interface Served {
  child: ChildProcess;
  url: string;
  stderr: () => string;
  exited: Promise<number | null>;
}

/** Start `corral serve ARGS`; resolves once it printed its URL (rejects if it exits first). */
export function serve(args: string[], env: Record<string, string | undefined> = {}): Promise<Served> {
  const child = spawn(process.execPath, [CLI, 'serve', '--port', '0', ...args], {
    cwd: ROOT,
    env: { ...process.env, CORRAL_TOKEN: undefined, CORRAL_APPROVER_TOKEN: undefined, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr += c));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (c: Buffer) => {
      stdout += c;
      const url = /on (http:\/\/\S+) /.exec(stdout)?.[1];
      if (url) resolve({ child, url, stderr: () => stderr, exited });
    });
    void exited.then((code) => reject(Object.assign(new Error(`corral serve exited ${code}: ${stderr}`), { code, stderr })));
  });
}

/** Run `corral serve ARGS` expecting it to stop by itself; its exit code and stderr. */
export async function serveFails(args: string[], env: Record<string, string | undefined> = {}): Promise<{ code: number; stderr: string }> {
  try {
    const s = await serve(args, env);
    s.child.kill('SIGKILL');
    throw new Error(`corral serve ${args.join(' ')} started on ${s.url}`);
  } catch (err) {
    const { code, stderr } = err as { code?: number; stderr?: string };
    if (code === undefined) throw err;
    return { code, stderr: stderr! };
  }
}

export interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  /** The body parsed as JSON (undefined when it is not JSON). */
  // biome-ignore lint/suspicious/noExplicitAny: tests read whatever shape the server answered and assert on it
  json: any;
}

export interface Send {
  method?: string;
  headers?: Record<string, string | number>;
  /** A string or bytes sent whole, or chunks sent one by one (chunked when no content-length is given). */
  body?: string | Uint8Array | Uint8Array[];
  /** A JSON body, sent with Content-Type: application/json. */
  json?: unknown;
  signal?: AbortSignal;
}

/** One request over a fresh connection; resolves with the answer, however the server ended it. */
export function send(url: string, path: string, options: Send = {}): Promise<Reply> {
  const headers: Record<string, string | number> = { ...options.headers };
  let body = options.body;
  if (options.json !== undefined) {
    body = JSON.stringify(options.json);
    headers['content-type'] ??= 'application/json';
  }
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${url}${path}`,
      { method: options.method ?? (body === undefined ? 'GET' : 'POST'), headers, agent: false, signal: options.signal },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode!, headers: res.headers, text, json });
        });
      },
    );
    // The server may answer and close before the whole body went out (413, 401): the answer is what counts.
    req.on('error', (err) => reject(err));
    if (Array.isArray(body)) {
      const chunks = body;
      const next = (i: number) => {
        if (i === chunks.length || req.destroyed) return void req.end();
        if (req.write(chunks[i])) setImmediate(() => next(i + 1));
        else req.once('drain', () => next(i + 1));
      };
      next(0);
    } else {
      req.end(body);
    }
  });
}

/** POST /execute with a JSON body. */
export const execute = (url: string, body: unknown, headers: Record<string, string> = {}) => send(url, '/execute', { json: body, headers });

/**
 * Parse Prometheus text exposition format 0.0.4 strictly: every line is a
 * HELP, a TYPE or a sample of a declared family; returns the samples.
 */
export function parsePrometheus(text: string): Array<{ name: string; labels: Record<string, string>; value: number }> {
  const types = new Map<string, string>();
  const samples: Array<{ name: string; labels: Record<string, string>; value: number }> = [];
  const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
  const sampleLine = new RegExp(`^(${NAME})(?:\\{(.*)\\})? (\\S+)(?: (-?\\d+))?$`);
  for (const line of text.split('\n')) {
    if (line === '') continue;
    let m = new RegExp(`^# (HELP|TYPE) (${NAME}) (.*)$`).exec(line);
    if (m) {
      if (m[1] === 'TYPE') {
        if (!['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(m[3]!)) throw new Error(`bad TYPE: ${line}`);
        types.set(m[2]!, m[3]!);
      }
      continue;
    }
    m = sampleLine.exec(line);
    if (!m) throw new Error(`not Prometheus text: ${JSON.stringify(line)}`);
    const [, name, labelText, valueText] = m;
    const family = [...types.keys()].find((f) => name === f || /^_(bucket|sum|count|total|created)$/.test(name!.slice(f.length)));
    if (!family) throw new Error(`sample of an undeclared family: ${line}`);
    const labels: Record<string, string> = {};
    if (labelText) {
      const labelRe = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)/gy;
      let at = 0;
      for (let l = labelRe.exec(labelText); l; l = labelRe.exec(labelText)) {
        labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
        at = labelRe.lastIndex;
      }
      if (at !== labelText.length) throw new Error(`bad labels: ${line}`);
    }
    // Prometheus reads values with Go's ParseFloat, which takes NaN in any case (prom-client writes "Nan").
    const value = /^nan$/i.test(valueText!)
      ? Number.NaN
      : valueText === '+Inf'
        ? Infinity
        : valueText === '-Inf'
          ? -Infinity
          : Number(valueText);
    if (Number.isNaN(value) && !/^nan$/i.test(valueText!)) throw new Error(`bad value: ${line}`);
    samples.push({ name: name!, labels, value });
  }
  return samples;
}

/** The value of one sample (0 when absent). */
export function metric(samples: ReturnType<typeof parsePrometheus>, name: string, labels: Record<string, string> = {}): number {
  const found = samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  return found?.value ?? 0;
}
