/** `corral worker`: a fleet worker (@corral/fleet) over this machine's sandbox pool, until SIGTERM or SIGINT. */
import { hostname } from 'node:os';
import { isPostgresUrl, openPostgresStore } from '../store-url.js';
import { EXIT_OK, EXIT_TOOL_FAILED, UsageError, parse, toolDirsFlag, type Cli } from './shared.js';

export const help = `corral worker --nats URL [options]

Run tool calls for the fleet: pull them from the NATS JetStream work queue
(stream CORRAL_CALLS, subjects corral.calls.TOOL), run each in this machine's
sandbox pool, record it, and answer on the caller's inbox. A host sends its
calls here with remote({ servers }) from @corral/fleet. A call is acked only
once its result is recorded; a call delivered again is answered from the
record instead of running twice. Before it pulls anything it compiles every
tool in a sandbox worker (log lines "compiling" and "compiled"), then prints one
line when ready. SIGTERM or SIGINT stops pulling, lets the calls in flight
finish, and exits 0 (a second signal exits at once); before ready, it stops
at once. One JSON log line per call on stderr.

  --nats URL            the NATS server (repeatable: servers of one cluster)
  --postgres URL        record calls in PostgreSQL, shared by the fleet: results
                        are then exactly-once across workers and restarts.
                        Without it, results are recorded in memory: exactly-once
                        only within this worker's life
  --tools DIR           also run the tools in DIR (repeatable); a caller's tool
                        must be here with the same name, version and wasm
  --no-bundled          do not run the bundled tools
  --concurrency N       calls run at once (default: one per sandbox worker)
  --workers N           sandbox workers (default: one per core)
  --ack-wait MS         how long a call may go unanswered before JetStream gives it
                        to another worker; running calls send heartbeats (default 30000)
  --max-deliver N       deliveries of one call before JetStream gives up (default 5)
  --name NAME           this worker's name in each call's snapshot (ran_on "fleet
                        NAME"), in logs and in 'corral fleet status' (default:
                        host name and process id)
  --metrics HOST:PORT   serve Prometheus metrics at http://HOST:PORT/metrics
                        (e.g. 0.0.0.0:9464; port 0 for any free one): calls by
                        tool and outcome, call durations, answers from the
                        record, retries, refused messages, calls in flight,
                        the sandbox pool, and process metrics
  --quiet               no log lines

Every worker answers 'corral fleet status' (core NATS subject corral.status)
with its name, host, tools, concurrency and counters.

Exit status: 0 after a graceful drain, 1 if the worker failed, 2 for a misused command.`;

export async function command(args: string[], { print, fail, io }: Cli): Promise<number> {
  const { values } = parse(
    args,
    {
      nats: { type: 'string', multiple: true },
      postgres: { type: 'string' },
      tools: { type: 'string', multiple: true },
      'no-bundled': { type: 'boolean' },
      concurrency: { type: 'string' },
      workers: { type: 'string' },
      'ack-wait': { type: 'string' },
      'max-deliver': { type: 'string' },
      name: { type: 'string' },
      metrics: { type: 'string' },
      quiet: { type: 'boolean' },
    },
    false,
  );
  if (values.help) return (print(help), EXIT_OK);
  const servers = values.nats ?? [];
  if (!servers.length) throw new UsageError('--nats URL is required: the NATS server the fleet shares (e.g. nats://127.0.0.1:4222).');
  const toolDirs = toolDirsFlag(values.tools);
  const workers = integerFlag('--workers', values.workers, 1, 1024);
  const concurrency = integerFlag('--concurrency', values.concurrency, 1, 1024);
  const ackWaitMs = integerFlag('--ack-wait', values['ack-wait'], 1000, 3_600_000);
  const maxDeliver = integerFlag('--max-deliver', values['max-deliver'], 1, 1000);
  const metricsAt = values.metrics !== undefined ? hostPortFlag('--metrics', values.metrics) : undefined;
  const name = values.name ?? `${hostname()}-${process.pid}`;

  // Signals are heard from here on, so one that comes while the worker starts (compiling its tools can take
  // a while) stops it cleanly instead of killing it with the default handler.
  let signals = 0;
  let stop!: () => void;
  const stopped = new Promise<void>((resolve) => {
    stop = resolve;
  });
  const onSignal = () => {
    if (++signals === 1) stop();
    else {
      fail('told to stop twice: exiting without waiting for the calls in flight (they go to another worker).');
      process.exit(1);
    }
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  try {
    return await serve();
  } finally {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
  }

  async function serve(): Promise<number> {
    const [{ Corral }, { FleetWorker, MemoryLedger, connectFleet, serveStatus }] = await Promise.all([
      import('../corral.js'),
      import('@corral/fleet'),
    ]);
    const log = (line: Record<string, unknown>) => {
      if (!values.quiet) io.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), ...line })}\n`);
    };
    // One connection for the worker and its status answers, opened first: a bad URL is misuse (exit 2), a server that is down exit 1.
    let nc: Awaited<ReturnType<typeof connectFleet>>;
    try {
      nc = await connectFleet(servers, 'corral-worker');
    } catch (err) {
      if ((err as { code?: unknown }).code === 'E_INPUT_VALIDATION') throw new UsageError((err as Error).message);
      throw err;
    }
    const resources: { close(): Promise<unknown> }[] = [{ close: () => nc.drain().catch(() => {}) }];
    const closeAll = async () => {
      for (const r of resources.reverse()) await r.close().catch(() => {});
    };
    let ledger: import('@corral/fleet').LedgerStore;
    let corral: import('../corral.js').Corral;
    try {
      // Opened before the pool: a database that cannot be reached is refused before any sandbox worker starts.
      ledger = values.postgres !== undefined ? await postgresLedger(values.postgres) : new MemoryLedger('memory (this worker only)');
      resources.push(ledger);
      corral = await Corral.create({ toolDirs, bundled: !values['no-bundled'], store: false, ...(workers ? { size: workers } : {}) });
      resources.push(corral);
    } catch (err) {
      await closeAll();
      throw err;
    }
    const recorded =
      values.postgres !== undefined
        ? 'results recorded in PostgreSQL'
        : "results recorded in memory (exactly-once within this worker's life)";
    for (const err of corral.loadErrors) log({ event: 'skipped_tools', code: err.code, message: err.message });
    const lanes = concurrency ?? corral.executor.pool.size;
    let worker: import('@corral/fleet').FleetWorker | undefined;
    let metrics: import('../server/worker-metrics.js').WorkerMetrics | undefined;
    let metricsUrl: string | null = null;
    if (metricsAt) {
      const { WorkerMetrics } = await import('../server/worker-metrics.js');
      const names = new Set(corral.registry.list().map((t) => t.spec.name));
      metrics = new WorkerMetrics({ tools: () => names, pool: corral.executor.pool, worker: () => worker, concurrency: lanes });
      try {
        const { url, server } = await metrics.listen(metricsAt.host, metricsAt.port);
        metricsUrl = url;
        resources.push({ close: () => new Promise((r) => server.close(r)) });
      } catch (err) {
        await closeAll();
        const code = (err as NodeJS.ErrnoException).code;
        const why: Record<string, string> = {
          EADDRINUSE: 'the port is in use; pick another, or port 0 for any free one',
          EACCES: 'not allowed to listen there (ports below 1024 need privileges)',
          EADDRNOTAVAIL: 'no such address on this machine',
        };
        if (code !== undefined && Object.hasOwn(why, code)) {
          fail(`cannot serve metrics on ${values.metrics}: ${why[code]} (${code}).`);
          return EXIT_TOOL_FAILED;
        }
        throw err;
      }
    }
    // "Ready" means ready: the sandbox workers are up and every tool is compiled in one before the first call is pulled.
    corral.executor.pool.prestart(corral.executor.pool.size);
    // Once told to stop, the compiles that the closing pool cuts short are not news.
    const notCompiled = await Promise.race([compileTools(corral, (line) => signals === 0 && log(line)), stopped.then(() => [])]);
    if (signals > 0) {
      log({ event: 'stopped', before: 'ready' });
      await closeAll();
      return EXIT_OK;
    }
    try {
      worker = await FleetWorker.start({
        connection: nc,
        registry: corral.registry,
        executor: corral.executor,
        ledger,
        concurrency: lanes,
        name,
        ...(ackWaitMs !== undefined ? { ackWaitMs } : {}),
        ...(maxDeliver !== undefined ? { maxDeliver } : {}),
        onEvent: (e) => {
          metrics?.event(e);
          log(e);
        },
      });
    } catch (err) {
      await closeAll();
      // Only option checks are E_INPUT_VALIDATION here (a bad --name): misuse, exit 2.
      if ((err as { code?: unknown }).code === 'E_INPUT_VALIDATION') throw new UsageError((err as Error).message);
      throw err;
    }
    const started = new Date();
    let state: 'running' | 'draining' = 'running';
    const tools = corral.registry.list().map((t) => `${t.spec.name}@${t.spec.version}`);
    const running = worker;
    const status = serveStatus(nc, () => ({
      name,
      host: hostname(),
      pid: process.pid,
      state,
      tools,
      tool_count: tools.length,
      concurrency: lanes,
      running: running.running,
      runs: running.stats.runs,
      answered_from_record: running.stats.answeredFromRecord,
      retries: running.stats.retries,
      refused: running.stats.refused,
      started_at: started.toISOString(),
      uptime_s: Math.round((Date.now() - started.getTime()) / 100) / 10,
      metrics: metricsUrl,
    }));
    const count = corral.registry.list().length;
    const failedNote = notCompiled.length > 0 ? ` (${notCompiled.join(', ')} did not compile: each call of it tries again)` : '';
    print(
      `corral: worker ready on ${servers.join(',')}: ${count} tool${count === 1 ? '' : 's'}${failedNote}, ` +
        `concurrency ${lanes}, ${recorded}, name ${name}${metricsUrl ? `, metrics on ${metricsUrl}` : ''}`,
    );

    try {
      await stopped;
      state = 'draining';
      log({ event: 'draining', running: worker.running });
      await worker.close();
      const { runs, answeredFromRecord, retries, refused } = worker.stats;
      log({ event: 'drained', runs, answered_from_record: answeredFromRecord, retries, refused });
    } finally {
      status.close();
      await closeAll();
    }
    return EXIT_OK;
  }
}

/**
 * Compile every tool in a sandbox worker, saying so: with many components and an empty transpile cache
 * this takes seconds. A tool that fails here is logged and compiled again by its first call.
 * Returns the name@version of each tool that failed.
 */
async function compileTools(corral: import('../corral.js').Corral, log: (line: Record<string, unknown>) => void): Promise<string[]> {
  const tools = corral.registry.list();
  const begun = performance.now();
  let done = 0;
  const failed: string[] = [];
  log({ event: 'compiling', tools: tools.length });
  const progress = setInterval(() => log({ event: 'compiling', tools: tools.length, done }), 5000).unref();
  try {
    await Promise.all(
      tools.map(async (tool) => {
        try {
          await corral.executor.preload(tool);
        } catch (err) {
          failed.push(`${tool.spec.name}@${tool.spec.version}`);
          const { code, message } = err as { code?: unknown; message?: unknown };
          log({ event: 'compile_failed', tool: tool.spec.name, code: code ?? null, message: String(message) });
        }
        done++;
      }),
    );
  } finally {
    clearInterval(progress);
  }
  log({ event: 'compiled', tools: tools.length, failed: failed.length, ms: Math.round(performance.now() - begun) });
  return failed.sort();
}

/** The fleet's shared ledger in PostgreSQL (@corral/postgres): a Store with getCallResult and finishCall. */
async function postgresLedger(url: string): Promise<import('@corral/fleet').LedgerStore> {
  if (!isPostgresUrl(url)) throw new UsageError(`bad --postgres ${JSON.stringify(url)}: expected a postgres:// or postgresql:// URL.`);
  return (await openPostgresStore(url)) as import('@corral/postgres').PostgresStore;
}

/** HOST:PORT (an IPv6 host in brackets: [::1]:9464); port 0 asks for any free one. */
function hostPortFlag(flag: string, value: string): { host: string; port: number } {
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9.-]+)):(\d{1,5})$/.exec(value);
  const port = m ? Number(m[3]) : Number.NaN;
  if (!m || port > 65535)
    throw new UsageError(`bad ${flag} ${JSON.stringify(value)}: expected HOST:PORT, e.g. 127.0.0.1:9464, 0.0.0.0:9464 or [::1]:9464.`);
  return { host: (m[1] ?? m[2])!, port };
}

function integerFlag(flag: string, value: string | undefined, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < min || n > max)
    throw new UsageError(`bad ${flag} ${value}: expected a whole number from ${min} to ${max}.`);
  return n;
}
