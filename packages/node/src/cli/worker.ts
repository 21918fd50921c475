/** `corral worker`: a fleet worker (@corral/fleet) over this machine's sandbox pool, until SIGTERM or SIGINT. */
import { isPostgresUrl, openPostgresStore } from '../store-url.js';
import { EXIT_OK, UsageError, parse, toolDirsFlag, type Cli } from './shared.js';

export const help = `corral worker --nats URL [options]

Run tool calls for the fleet: pull them from the NATS JetStream work queue
(stream CORRAL_CALLS, subjects corral.calls.TOOL), run each in this machine's
sandbox pool, record it, and answer on the caller's inbox. A host sends its
calls here with remote({ servers }) from @corral/fleet. A call is acked only
once its result is recorded; a call delivered again is answered from the
record instead of running twice. Prints one line when ready; SIGTERM or SIGINT
stops pulling, lets the calls in flight finish, and exits 0 (a second signal
exits at once). One JSON log line per call on stderr.

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
                        NAME") and in logs (default: host name and process id)
  --quiet               no log lines

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
      quiet: { type: 'boolean' },
    },
    false,
  );
  if (values.help) return (print(help), EXIT_OK);
  if (!values.nats?.length) throw new UsageError('--nats URL is required: the NATS server the fleet shares (e.g. nats://127.0.0.1:4222).');
  const toolDirs = toolDirsFlag(values.tools);
  const workers = integerFlag('--workers', values.workers, 1, 1024);
  const concurrency = integerFlag('--concurrency', values.concurrency, 1, 1024);
  const ackWaitMs = integerFlag('--ack-wait', values['ack-wait'], 1000, 3_600_000);
  const maxDeliver = integerFlag('--max-deliver', values['max-deliver'], 1, 1000);

  const [{ Corral }, { FleetWorker, MemoryLedger }] = await Promise.all([import('../corral.js'), import('@corral/fleet')]);
  const log = (line: Record<string, unknown>) => {
    if (!values.quiet) io.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), ...line })}\n`);
  };
  // Opened first: a database that cannot be reached is refused before any sandbox worker starts.
  const ledger: import('@corral/fleet').LedgerStore =
    values.postgres !== undefined ? await postgresLedger(values.postgres) : new MemoryLedger('memory (this worker only)');
  const recorded =
    values.postgres !== undefined
      ? 'results recorded in PostgreSQL'
      : "results recorded in memory (exactly-once within this worker's life)";
  const corral = await Corral.create({ toolDirs, bundled: !values['no-bundled'], store: false, ...(workers ? { size: workers } : {}) });
  for (const err of corral.loadErrors) log({ event: 'skipped_tools', code: err.code, message: err.message });
  let worker: import('@corral/fleet').FleetWorker;
  try {
    worker = await FleetWorker.start({
      servers: values.nats,
      registry: corral.registry,
      executor: corral.executor,
      ledger,
      concurrency: concurrency ?? corral.executor.pool.size,
      ...(ackWaitMs !== undefined ? { ackWaitMs } : {}),
      ...(maxDeliver !== undefined ? { maxDeliver } : {}),
      ...(values.name !== undefined ? { name: values.name } : {}),
      onEvent: (e) => log(e),
    });
  } catch (err) {
    await corral.close();
    await ledger.close();
    // Only option checks are E_INPUT_VALIDATION here (a --nats value that is no URL): misuse, exit 2.
    if ((err as { code?: unknown }).code === 'E_INPUT_VALIDATION') throw new UsageError((err as Error).message);
    throw err;
  }
  corral.executor.pool.prestart(corral.executor.pool.size);
  const count = corral.registry.list().length;
  print(
    `corral: worker ready on ${values.nats.join(',')}: ${count} tool${count === 1 ? '' : 's'}, ` +
      `concurrency ${concurrency ?? corral.executor.pool.size}, ${recorded}`,
  );

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
    await stopped;
    log({ event: 'draining', running: worker.running });
    await worker.close();
    log({ event: 'drained', ...worker.stats });
  } finally {
    await corral.close();
    await ledger.close();
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
  }
  return EXIT_OK;
}

/** The fleet's shared ledger in PostgreSQL (@corral/postgres): a Store with getCallResult and finishCall. */
async function postgresLedger(url: string): Promise<import('@corral/fleet').LedgerStore> {
  if (!isPostgresUrl(url)) throw new UsageError(`bad --postgres ${JSON.stringify(url)}: expected a postgres:// or postgresql:// URL.`);
  return (await openPostgresStore(url)) as import('@corral/postgres').PostgresStore;
}

function integerFlag(flag: string, value: string | undefined, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < min || n > max)
    throw new UsageError(`bad ${flag} ${value}: expected a whole number from ${min} to ${max}.`);
  return n;
}
