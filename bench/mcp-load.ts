/**
 * `npm run bench:mcp`: load on MCP over Streamable HTTP (`corral serve --mcp`).
 *
 * Starts `corral serve --mcp` as a subprocess (its own SQLite store), then N
 * MCP clients (the official SDK's Client, each its own session) call
 * diff-summary back to back for D seconds. Afterwards it checks: every call
 * answered with a tool result or a classified error (a JSON-RPC error, or
 * `isError` with the Corral code), the server alive to the end and exiting 0
 * on SIGTERM, and every answered call in the snapshot store with its result.
 *
 *   node bench/dist/mcp-load.js [--clients 50] [--seconds 30] [--workers N]
 *
 * Exits 1 when any check fails.
 */
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { BUNDLED_TOOLS_DIR } from '@corral/node';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startServe } from './serve-process.js';
import { fmt, quantile, table } from './stats.js';

const { values } = parseArgs({
  options: {
    clients: { type: 'string', default: '50' },
    seconds: { type: 'string', default: '30' },
    workers: { type: 'string' },
    'keep-dir': { type: 'boolean' },
  },
});
const CLIENTS = Number(values.clients);
const SECONDS = Number(values.seconds);
if (!(CLIENTS >= 1 && SECONDS > 0)) throw new Error('--clients and --seconds must be positive numbers');
const input = JSON.parse(readFileSync(join(BUNDLED_TOOLS_DIR, 'diff-summary/examples/example.diff.json'), 'utf8')) as Record<
  string,
  unknown
>;
const log = (s: string) => process.stderr.write(`${s}\n`);

interface Answer {
  ms: number;
  /** 'result' (a tool result, isError or not), 'error' (a JSON-RPC error with a code), 'unanswered' (the transport failed). */
  kind: 'result' | 'error' | 'unanswered';
  ok: boolean;
  code: string | null;
  snapshotId: string | null;
  detail?: string;
}

async function call(client: Client): Promise<Answer> {
  const started = performance.now();
  try {
    const result = await client.callTool({ name: 'diff-summary', arguments: input });
    const meta = (result._meta ?? {}) as { 'corral/error'?: { code?: string }; 'corral/snapshot'?: { id?: string } };
    return {
      ms: performance.now() - started,
      kind: 'result',
      ok: result.isError !== true,
      code: meta['corral/error']?.code ?? null,
      snapshotId: meta['corral/snapshot']?.id ?? null,
    };
  } catch (err) {
    const ms = performance.now() - started;
    const code = (err as { code?: unknown }).code;
    // The SDK raises McpError (a JSON-RPC error: classified) or a transport error (unanswered).
    if (typeof code === 'number')
      return { ms, kind: 'error', ok: false, code: String(code), snapshotId: null, detail: (err as Error).message };
    return { ms, kind: 'unanswered', ok: false, code: null, snapshotId: null, detail: (err as Error).message };
  }
}

async function connect(url: URL): Promise<Client> {
  const client = new Client({ name: 'corral-mcp-load', version: '0.0.0' });
  await client.connect(new StreamableHTTPClientTransport(url));
  return client;
}

async function main(): Promise<number> {
  const workers = values.workers ?? String(availableParallelism());
  const server = await startServe(['--mcp', '--workers', workers], log);
  const base = server.url;
  const url = new URL('/mcp', base);
  log(`serving on ${url}; connecting ${CLIENTS} MCP clients and warming up…`);
  const clients = await Promise.all(Array.from({ length: CLIENTS }, () => connect(url)));
  const warm = await call(clients[0]!);
  if (!warm.ok) throw new Error(`the warm-up call failed: ${JSON.stringify(warm)}`);

  log(`${CLIENTS} clients for ${SECONDS} s…`);
  const answers: Answer[] = [];
  const started = performance.now();
  const until = started + SECONDS * 1000;
  await Promise.all(
    clients.map(async (client) => {
      while (performance.now() < until && !server.exitedEarly) answers.push(await call(client));
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  await Promise.all(clients.map((c) => c.close().catch(() => {})));

  log('SIGTERM…');
  const aliveAtEnd = !server.exitedEarly;
  const { exit, recorded } = await server.stop();
  const results = answers.filter((a) => a.kind === 'result');
  const missing = results.filter((a) => a.snapshotId === null || !recorded.has(a.snapshotId));
  const interrupted = results.filter((a) => a.snapshotId !== null && recorded.get(a.snapshotId)?.status === 'interrupted');
  const byKind = (kind: Answer['kind']) => answers.filter((a) => a.kind === kind);
  const count = (list: Answer[], key: (a: Answer) => string) =>
    Object.entries(list.reduce<Record<string, number>>((m, a) => ((m[key(a)] = (m[key(a)] ?? 0) + 1), m), {}))
      .map(([k, n]) => `${k}: ${n}`)
      .join(', ') || 'none';
  const ms = answers.filter((a) => a.kind !== 'unanswered').map((a) => a.ms);
  const checks: Array<[string, boolean, string]> = [
    ['every call answered (no transport failure)', byKind('unanswered').length === 0, count(byKind('unanswered'), (a) => a.detail ?? '?')],
    [
      'every answer a tool result or a classified error (isError carries a Corral code)',
      results.every((a) => a.ok || a.code !== null),
      `${results.length} results (${results.filter((a) => !a.ok).length} isError), ${byKind('error').length} JSON-RPC errors (${count(byKind('error'), (a) => a.code ?? '?')})`,
    ],
    [
      'the server stayed up and exited 0 on SIGTERM',
      aliveAtEnd && exit.code === 0,
      `exit code ${exit.code}${exit.signal ? `, signal ${exit.signal}` : ''}`,
    ],
    [
      'every answered call in the snapshot store, with its result',
      missing.length === 0 && interrupted.length === 0,
      `${results.length - missing.length}/${results.length} found, ${interrupted.length} interrupted; ${recorded.size} records in all (the warm-up call included)`,
    ],
  ];
  const rows = [
    ['calls answered', String(answers.length - byKind('unanswered').length), `of ${answers.length} made in ${elapsed.toFixed(1)} s`],
    [
      'throughput',
      `${(answers.length / elapsed).toFixed(0)} calls/s`,
      `${(results.filter((a) => a.ok).length / elapsed).toFixed(0)} ok calls/s`,
    ],
    ['outcomes', count(answers, (a) => (a.kind === 'result' ? (a.ok ? 'ok' : `isError ${a.code}`) : `${a.kind} ${a.code ?? ''}`)), ''],
    [
      'latency',
      `p50 ${fmt(quantile(ms, 0.5))}`,
      `p90 ${fmt(quantile(ms, 0.9))}, p99 ${fmt(quantile(ms, 0.99))}, max ${fmt(quantile(ms, 1))}`,
    ],
  ];
  console.log(
    `\n## MCP load: tools/call diff-summary over Streamable HTTP\n\n` +
      `${CLIENTS} MCP clients (the SDK's Client, one session each), calls back to back for ${SECONDS} s, against ` +
      `\`corral serve --mcp\` in its own process with ${workers} workers (node ${process.version}, ${availableParallelism()} cores; ` +
      `clients and server share them).\n\n` +
      `${table(['measurement', 'value', ''], rows)}\n\n${table(
        ['check', 'result', ''],
        checks.map(([what, pass, detail]) => [what, pass ? 'pass' : '**FAIL**', detail]),
      )}`,
  );
  server.cleanUp(values['keep-dir'] === true);
  return checks.every(([, pass]) => pass) ? 0 : 1;
}

process.exitCode = await main();
