/** `corral fleet status`: the fleet's workers and its work queue, read over NATS. */
import { EXIT_OK, EXIT_TOOL_FAILED, EXIT_USAGE, UsageError, cell, parse, type Cli } from './shared.js';

export const help = `corral fleet status --nats URL [--json] [--timeout MS]

Ask every worker on the fleet's NATS servers what it is doing (each answers
on the core subject corral.status) and JetStream how deep the work queue is.

  Workers   name, host, tools, concurrency, calls running now, calls run,
            answered from the record (a redelivery whose result was already
            recorded), retries (run again after their worker died), refused
            (malformed messages), uptime, state (running or draining)
  Queue     calls waiting for a worker (pending), delivered and not yet
            acked (ack pending: running, or their worker died and ack_wait
            has not passed), of those delivered more than once (redelivered),
            and idle pulls waiting for a call

  --nats URL     the NATS server (repeatable: servers of one cluster)
  --timeout MS   how long to wait for workers' answers (default 1000)
  --json         the status as JSON

Exit status: 0 when at least one worker answered; 1 when none did, or the
server could not be reached; 2 for a misused command.`;

export async function command(args: string[], cli: Cli): Promise<number> {
  const [sub, ...rest] = args;
  switch (sub) {
    case undefined:
    case '-h':
    case '--help':
      cli.print(help);
      return sub === undefined ? EXIT_USAGE : EXIT_OK;
    case 'status':
      return statusCommand(rest, cli);
    default:
      throw new UsageError(`unknown fleet command '${sub}'. Commands: status.`);
  }
}

async function statusCommand(args: string[], { print, fail }: Cli): Promise<number> {
  const { values } = parse(
    args,
    { nats: { type: 'string', multiple: true }, timeout: { type: 'string' }, json: { type: 'boolean' } },
    false,
  );
  if (values.help) return (print(help), EXIT_OK);
  if (!values.nats?.length) throw new UsageError('--nats URL is required: the NATS server the fleet shares (e.g. nats://127.0.0.1:4222).');
  let timeoutMs = 1000;
  if (values.timeout !== undefined) {
    timeoutMs = Number(values.timeout);
    if (!/^\d+$/.test(values.timeout) || timeoutMs < 10 || timeoutMs > 60_000)
      throw new UsageError(`bad --timeout ${values.timeout}: expected a whole number of milliseconds from 10 to 60000.`);
  }
  const { fleetStatus } = await import('@corral/fleet');
  let status: Awaited<ReturnType<typeof fleetStatus>>;
  try {
    status = await fleetStatus({ servers: values.nats, timeoutMs });
  } catch (err) {
    if ((err as { code?: unknown }).code === 'E_INPUT_VALIDATION') throw new UsageError((err as Error).message);
    throw err;
  }
  const none = status.workers.length === 0;
  if (values.json) {
    print(JSON.stringify(status, null, 2));
  } else {
    print(render(status));
  }
  if (none) {
    fail(`no worker answered within ${timeoutMs} ms on ${status.servers}: start one with 'corral worker --nats URL'.`);
    return EXIT_TOOL_FAILED;
  }
  return EXIT_OK;
}

type Status = Awaited<ReturnType<typeof import('@corral/fleet').fleetStatus>>;

function render(s: Status): string {
  const lines: string[] = [];
  const server = s.server.version ? ` (nats-server ${cell(s.server.version)})` : '';
  lines.push(`Fleet on ${cell(s.servers)}${server}`);
  lines.push('');
  if (s.queue) {
    const q = s.queue;
    lines.push(`Queue: stream ${q.stream}, consumer ${q.consumer}`);
    lines.push(
      `  ${q.pending} pending, ${q.ack_pending} ack pending, ${q.redelivered} redelivered, ${q.waiting_pulls} idle pulls; ` +
        `${q.messages} message${q.messages === 1 ? '' : 's'} (${bytes(q.bytes)}) in the stream`,
    );
  } else {
    lines.push(`Queue: unknown: ${s.queue_problem}`);
  }
  lines.push('');
  const answered = `${s.workers.length} answered in ${s.waited_ms} ms${s.unreadable_answers > 0 ? `, ${s.unreadable_answers} unreadable answers ignored` : ''}`;
  if (s.workers.length === 0) {
    lines.push(`Workers: none (${answered})`);
    return lines.join('\n');
  }
  lines.push(`Workers (${answered}):`);
  const head = ['NAME', 'HOST', 'STATE', 'TOOLS', 'CONC', 'RUNNING', 'RUN', 'FROM RECORD', 'RETRIES', 'REFUSED', 'UPTIME'];
  const rows = s.workers.map((w) => [
    cell(w.name),
    cell(w.host),
    w.state,
    String(w.tool_count),
    String(w.concurrency),
    String(w.running),
    String(w.runs),
    String(w.answered_from_record),
    String(w.retries),
    String(w.refused),
    duration(w.uptime_s),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (r: string[]) =>
    r
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  lines.push(`  ${line(head)}`);
  for (const r of rows) lines.push(`  ${line(r)}`);
  const total = s.workers.reduce((n, w) => ({ c: n.c + w.concurrency, r: n.r + w.running }), { c: 0, r: 0 });
  lines.push(`  total: ${total.r} of ${total.c} lanes busy`);
  return lines.join('\n');
}

function duration(seconds: number): string {
  const s = Math.floor(seconds);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
  return `${Math.floor(s / 86400)}d${String(Math.floor((s % 86400) / 3600)).padStart(2, '0')}h`;
}

function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}
