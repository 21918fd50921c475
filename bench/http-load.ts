/**
 * `npm run bench:http`: load on `corral serve`'s POST /execute.
 *
 * Starts `corral serve` as a subprocess (its own SQLite store, request log
 * to a file), then N clients, each on its own keep-alive connection, send
 * diff-summary calls back to back for D seconds. Afterwards it checks what
 * the issue asks: every request answered with a result envelope or a
 * classified error (`error.code`), the server alive to the end and exiting
 * 0 on SIGTERM, and every answered call in the snapshot store with its
 * result (not interrupted). Reports throughput and latency percentiles.
 *
 *   node bench/dist/http-load.js [--clients 200] [--seconds 30] [--workers N] [--diff small|large]
 *
 * Exits 1 when any check fails.
 */
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { BUNDLED_TOOLS_DIR } from '@corral/node';
import { syntheticDiff } from './diffs.js';
import { startServe } from './serve-process.js';
import { fmt, quantile, table } from './stats.js';

const { values } = parseArgs({
  options: {
    clients: { type: 'string', default: '200' },
    seconds: { type: 'string', default: '30' },
    workers: { type: 'string' },
    diff: { type: 'string', default: 'small' },
    'keep-dir': { type: 'boolean' },
  },
});
const CLIENTS = Number(values.clients);
const SECONDS = Number(values.seconds);
if (!(CLIENTS >= 1 && SECONDS > 0)) throw new Error('--clients and --seconds must be positive numbers');
const example = JSON.parse(readFileSync(join(BUNDLED_TOOLS_DIR, 'diff-summary/examples/example.diff.json'), 'utf8')) as { diff: string };
const input = values.diff === 'large' ? { diff: syntheticDiff(256 * 1024) } : example;
const BODY = Buffer.from(JSON.stringify({ tool: 'diff-summary', input }));
const log = (s: string) => process.stderr.write(`${s}\n`);

interface Answer {
  ms: number;
  status: number;
  /** 'result' (an envelope), 'error' ({ error: { code } }), 'unclassified' (anything else) or 'unanswered' (no HTTP answer). */
  kind: 'result' | 'error' | 'unclassified' | 'unanswered';
  code: string | null;
  ok: boolean;
  snapshotId: string | null;
  snapshotError: string | null;
  detail?: string;
}

function post(url: string, agent: Agent): Promise<Answer> {
  const started = performance.now();
  return new Promise((resolve) => {
    const req = request(
      `${url}/execute`,
      { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': BODY.length } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', (err) => resolve(unanswered(started, err)));
        res.on('end', () => {
          const ms = performance.now() - started;
          const status = res.statusCode ?? 0;
          let body: { ok?: unknown; error?: { code?: unknown } | null; snapshot?: { id?: string; error?: string } };
          try {
            body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
          } catch {
            return resolve({ ms, status, kind: 'unclassified', code: null, ok: false, snapshotId: null, snapshotError: null });
          }
          const code = typeof body.error?.code === 'string' ? body.error.code : null;
          if (typeof body.ok === 'boolean') {
            resolve({
              ms,
              status,
              kind: 'result',
              code,
              ok: body.ok,
              snapshotId: body.snapshot?.id ?? null,
              snapshotError: body.snapshot?.error ?? null,
            });
          } else {
            resolve({ ms, status, kind: code ? 'error' : 'unclassified', code, ok: false, snapshotId: null, snapshotError: null });
          }
        });
      },
    );
    req.on('error', (err) => resolve(unanswered(started, err)));
    req.end(BODY);
  });
}

function unanswered(started: number, err: Error): Answer {
  const code = (err as NodeJS.ErrnoException).code ?? err.message;
  return {
    ms: performance.now() - started,
    status: 0,
    kind: 'unanswered',
    code: null,
    ok: false,
    snapshotId: null,
    snapshotError: null,
    detail: code,
  };
}

/** Resident memory of a process in MB, from /proc (Linux); undefined elsewhere. */
function rssMb(pid: number): number | undefined {
  try {
    const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb ? Number(kb) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

async function main(): Promise<number> {
  const workers = values.workers ?? String(availableParallelism());
  const server = await startServe(['--workers', workers, '--concurrency', String(Math.max(256, CLIENTS))], log);
  const { url, child } = server;
  log(`serving on ${url}; warming up (first call transpiles diff-summary if the cache is cold)…`);
  const warm = await post(url, new Agent({ keepAlive: false }));
  if (!warm.ok) throw new Error(`the warm-up call failed: ${JSON.stringify(warm)}`);

  log(`${CLIENTS} clients for ${SECONDS} s…`);
  const agent = new Agent({ keepAlive: true, maxSockets: CLIENTS });
  const answers: Answer[] = [];
  let peakRss = rssMb(child.pid!) ?? 0;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, rssMb(child.pid!) ?? 0)), 250);
  const started = performance.now();
  const until = started + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (performance.now() < until && !server.exitedEarly) answers.push(await post(url, agent));
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  clearInterval(sampler);
  agent.destroy();

  const metricsText = await new Promise<string>((resolve) => {
    request(`${url}/metrics`, { agent: false }, (res) => {
      let t = '';
      res.on('data', (c: Buffer) => (t += c));
      res.on('end', () => resolve(t));
    })
      .on('error', () => resolve(''))
      .end();
  });
  const metric = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(metricsText)?.[1] ?? Number.NaN);

  log('SIGTERM…');
  const aliveAtEnd = !server.exitedEarly;
  // Every answered call must be in the store, with its result.
  const { exit, recorded } = await server.stop();
  const results = answers.filter((a) => a.kind === 'result');
  const missing = results.filter((a) => a.snapshotId === null || !recorded.has(a.snapshotId));
  const interrupted = results.filter((a) => a.snapshotId !== null && recorded.get(a.snapshotId)?.status === 'interrupted');
  const mismatched = results.filter((a) => {
    const e = a.snapshotId === null ? undefined : recorded.get(a.snapshotId);
    return e !== undefined && e.error_code !== a.code;
  });
  const logLines = readFileSync(server.logPath, 'utf8')
    .split('\n')
    .filter((l) => l.includes('"event":"request"') && l.includes('"path":"/execute"')).length;

  const byKind = (kind: Answer['kind']) => answers.filter((a) => a.kind === kind);
  const count = (list: Answer[], key: (a: Answer) => string) =>
    Object.entries(list.reduce<Record<string, number>>((m, a) => ((m[key(a)] = (m[key(a)] ?? 0) + 1), m), {}))
      .map(([k, n]) => `${k}: ${n}`)
      .join(', ') || 'none';
  const ms = answers.filter((a) => a.kind !== 'unanswered').map((a) => a.ms);
  const okMs = results.filter((a) => a.ok).map((a) => a.ms);
  const checks: Array<[string, boolean, string]> = [
    [
      'every request answered (no connection error)',
      byKind('unanswered').length === 0,
      count(byKind('unanswered'), (a) => a.detail ?? '?'),
    ],
    [
      'every answer a result envelope or a classified error',
      byKind('unclassified').length === 0,
      `${results.length} results, ${byKind('error').length} classified errors (${count(byKind('error'), (a) => `${a.status} ${a.code}`)}), ${byKind('unclassified').length} unclassified`,
    ],
    [
      'the server stayed up and exited 0 on SIGTERM',
      aliveAtEnd && exit.code === 0,
      `exit code ${exit.code}${exit.signal ? `, signal ${exit.signal}` : ''}`,
    ],
    [
      'every answered call in the snapshot store, with its result',
      missing.length === 0 && interrupted.length === 0 && mismatched.length === 0,
      `${results.length - missing.length}/${results.length} found, ${interrupted.length} interrupted, ${mismatched.length} with another error code; ${recorded.size} records in all (the warm-up call included)`,
    ],
    ['one request log line per /execute request', logLines === answers.length + 1, `${logLines} lines for ${answers.length + 1} requests`],
  ];
  const rows = [
    ['requests answered', String(answers.length - byKind('unanswered').length), `of ${answers.length} sent in ${elapsed.toFixed(1)} s`],
    [
      'throughput',
      `${(answers.length / elapsed).toFixed(0)} calls/s`,
      `${(results.filter((a) => a.ok).length / elapsed).toFixed(0)} ok calls/s`,
    ],
    [
      'outcomes',
      count(answers, (a) => (a.kind === 'result' ? (a.ok ? '200 ok' : `${a.status} ${a.code}`) : `${a.status} ${a.code ?? a.kind}`)),
      '',
    ],
    [
      'latency, every answer',
      `p50 ${fmt(quantile(ms, 0.5))}`,
      `p90 ${fmt(quantile(ms, 0.9))}, p99 ${fmt(quantile(ms, 0.99))}, max ${fmt(quantile(ms, 1))}`,
    ],
    ['latency, ok calls', `p50 ${fmt(quantile(okMs, 0.5))}`, `p99 ${fmt(quantile(okMs, 0.99))}`],
    [
      'server',
      `peak RSS ${peakRss.toFixed(0)} MB`,
      `${workers} workers, worker restarts ${metric('corral_worker_restarts_total')}, snapshot write errors ${results.filter((a) => a.snapshotError).length}`,
    ],
  ];
  console.log(
    `\n## HTTP load: POST /execute, diff-summary (${values.diff} diff, ${BODY.length} bytes a request)\n\n` +
      `${CLIENTS} clients on keep-alive connections, back to back for ${SECONDS} s, against \`corral serve\` in its own process ` +
      `(node ${process.version}, ${availableParallelism()} cores; clients and server share them).\n\n` +
      `${table(['measurement', 'value', ''], rows)}\n\n${table(
        ['check', 'result', ''],
        checks.map(([what, pass, detail]) => [what, pass ? 'pass' : '**FAIL**', detail]),
      )}`,
  );
  server.cleanUp(values['keep-dir'] === true);
  return checks.every(([, pass]) => pass) ? 0 : 1;
}

process.exitCode = await main();
