/**
 * `corral snapshots list|show|export|prune`: reading back what ran and
 * trimming the store.
 */
import { statSync } from 'node:fs';
import { lstat, open, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import {
  CorralError,
  ErrorCodes,
  isoFromNs,
  nowNs,
  nsFromDate,
  type DecisionSnapshot,
  type ExecutionFilter,
  type ExecutionSnapshot,
  type ExecutionStatus,
  type SnapshotRecord,
} from '@corral/core';
import { defaultStorePath } from '../store-sqlite.js';
import { isPostgresUrl } from '../store-url.js';
import { EXIT_OK, EXIT_USAGE, UsageError, cell, indent, parse, type Cli, type Print } from './shared.js';
import { noStore, openExisting } from './store.js';
import { FolderError, absoluteAsGiven, makeFolders } from '../folders.js';

export const help = `corral snapshots list [--tool NAME] [--since WHEN] [--error CODE] [--decision ID]
                      [--status ok|failed|interrupted] [--limit N] [--json]
corral snapshots show ID [--json]
corral snapshots export [--format jsonl] [--output FILE]
corral snapshots prune (--older-than DURATION | --keep N) [--archive FILE]

Every call is recorded: an intent before the tool runs, a result after it.
A call with an intent and no result is 'interrupted' (the process stopped
mid-call, or the call is still running).
  list      newest first (50 unless --limit; 0 for all). WHEN is a duration
            back from now (2h, 7d) or a date (2026-11-29T09:00Z)
  show      one execution or decision, in full
  export    every record as JSON lines: decisions, then executions, oldest first.
            With --output, the records written are marked archived: a size
            cap (--store-max-mb on run, serve, mcp) removes those first
  prune     write the records it removes to an archive (JSONL, default beside
            the store in archive/) and only then delete them, with the inputs
            no kept call shares; the file shrinks by what they took. Prints
            the archive's path. DURATION: 90s, 15m, 36h, 30d, 2w
  --store PATH   the store to read: an SQLite file, or a postgres:// URL
                 (default as for corral run)`;

const STATUSES: ExecutionStatus[] = ['ok', 'failed', 'interrupted'];

export async function command(args: string[], { print }: Cli): Promise<number> {
  const [sub, ...rest] = args;
  switch (sub) {
    case undefined:
    case '-h':
    case '--help':
      print(help);
      return sub === undefined ? EXIT_USAGE : EXIT_OK;
    case 'list':
      return listCommand(rest, print);
    case 'show':
      return showCommand(rest, print);
    case 'export':
      return exportCommand(rest, print);
    case 'prune':
      return pruneCommand(rest, print);
    default:
      throw new UsageError(`unknown snapshots command '${sub}'. Commands: list, show, export, prune.`);
  }
}

async function listCommand(args: string[], print: Print): Promise<number> {
  const { values, positionals } = parse(
    args,
    {
      tool: { type: 'string' },
      since: { type: 'string' },
      error: { type: 'string' },
      decision: { type: 'string' },
      status: { type: 'string' },
      limit: { type: 'string' },
      json: { type: 'boolean' },
      store: { type: 'string' },
    },
    true,
  );
  if (values.help) return (print(help), EXIT_OK);
  if (positionals.length > 0)
    throw new UsageError(
      `snapshots list takes no arguments (got ${positionals.join(' ')}); filter with --tool, --since, --error, --decision, --status.`,
    );
  const filter: ExecutionFilter = {};
  if (values.tool !== undefined) filter.tool = values.tool;
  if (values.since !== undefined) filter.since = parseSince(values.since);
  if (values.error !== undefined) filter.errorCode = values.error;
  if (values.decision !== undefined) filter.decisionId = values.decision;
  if (values.status !== undefined) {
    if (!STATUSES.includes(values.status as ExecutionStatus))
      throw new UsageError(`bad --status ${values.status}: use ${STATUSES.join(', ')}.`);
    filter.status = values.status as ExecutionStatus;
  }
  const limit = values.limit === undefined ? 50 : Number(values.limit);
  if (!Number.isInteger(limit) || limit < 0) throw new UsageError(`bad --limit ${values.limit}: a whole number (0 for no limit).`);
  if (limit > 0) filter.limit = limit;

  const store = await openExisting(values.store);
  const found = store ? await store.listExecutions(filter) : [];
  await store?.close();
  if (values.json) return (print(JSON.stringify(found, null, 2)), EXIT_OK);
  if (found.length === 0)
    return (
      print(
        store
          ? 'No snapshots match.'
          : `No snapshots recorded yet (${absoluteAsGiven(values.store ?? defaultStorePath())} does not exist).`,
      ),
      EXIT_OK
    );
  // Where calls ran, when any listed call was routed (a fleet): "local" or "fleet NAME"; `show` says why.
  const routed = found.some((e) => e.ran_on);
  // Escaped before the widths are measured, so the columns line up as printed.
  const rows = found.map((e) =>
    [
      e.id,
      isoFromNs(e.intent_ns).slice(0, 23).replace('T', ' '),
      `${e.tool}@${e.version ?? '?'}`,
      e.status,
      e.error_code ?? '',
      e.duration_ms === null ? '' : `${e.duration_ms.toFixed(1)} ms`,
      ...(routed ? [(e.ran_on ?? '').split(/[,:]/)[0]!] : []),
    ].map(cell),
  );
  const header = ['ID', 'TIME (UTC)', 'TOOL', 'STATUS', 'ERROR', 'DURATION', ...(routed ? ['RAN ON'] : [])];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  for (const r of [header, ...rows])
    print(
      r
        .map((c, i) => c.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    );
  if (filter.limit !== undefined && found.length === filter.limit) print(`(newest ${filter.limit} shown; --limit N for more, 0 for all)`);
  return EXIT_OK;
}

async function showCommand(args: string[], print: Print): Promise<number> {
  const { values, positionals } = parse(args, { json: { type: 'boolean' }, store: { type: 'string' } }, true);
  if (values.help) return (print(help), EXIT_OK);
  if (positionals.length !== 1)
    throw new UsageError('name one snapshot id, e.g. corral snapshots show 1b9d6bcd-bbfd-4b2d-9b5d-ab8dfbbd4bed');
  const id = positionals[0]!;
  const store = await openExisting(values.store);
  if (!store) throw noStore(values.store);
  try {
    const execution = await store.getExecution(id);
    const decision = execution ? null : await store.getDecision(id);
    if (!execution && !decision)
      throw new CorralError(ErrorCodes.STORE, `No snapshot with id ${id} in ${store.location}`, {
        store: store.location,
        id,
      });
    if (execution) {
      const linked = execution.decision_id ? await store.getDecision(execution.decision_id) : null;
      if (values.json) print(JSON.stringify({ kind: 'execution', ...execution }, null, 2));
      else printExecution(execution, linked, print);
    } else {
      const calls = await store.listExecutions({ decisionId: id });
      if (values.json) print(JSON.stringify({ kind: 'decision', ...decision, executions: calls.map((c) => c.id) }, null, 2));
      else printDecision(decision!, calls, print);
    }
    return EXIT_OK;
  } finally {
    await store.close();
  }
}

function printExecution(e: ExecutionSnapshot, decision: DecisionSnapshot | null, print: Print): void {
  const field = (name: string, value: string | number | null) =>
    print(`  ${name.padEnd(14)} ${value === null ? '-' : cell(String(value))}`);
  print(`execution ${cell(e.id)}`);
  field(
    'status',
    e.status + (e.status === 'interrupted' ? ' (an intent with no result: the process stopped mid-call, or it is still running)' : ''),
  );
  field('tool', `${e.tool}@${e.version ?? '?'}`);
  field(
    'decision',
    e.decision_id
      ? `${e.decision_id}${decision ? ` (${decision.model ?? 'model ?'}, ${isoFromNs(decision.time_ns)})` : ' (pruned)'}`
      : null,
  );
  field('intent', isoFromNs(e.intent_ns));
  field('result', e.result_ns === null ? null : isoFromNs(e.result_ns));
  field('duration', e.duration_ms === null ? null : `${e.duration_ms} ms`);
  if (e.ran_on) field('ran on', e.ran_on);
  field('exit code', e.exit_code);
  field('error', e.error_code === null ? null : `${e.error_code}: ${e.error_message ?? ''}`);
  field('peak memory', e.peak_memory_bytes === null ? null : `${(e.peak_memory_bytes / 1048576).toFixed(1)} MiB`);
  field('wasm sha256', e.wasm_sha256);
  field('input sha256', e.input_sha256);
  field('stdout sha256', e.stdout_sha256);
  print(e.input_json === null ? 'input: not recorded' : `input:\n${indent(pretty(e.input_json))}`);
  for (const stream of ['stdout', 'stderr'] as const) {
    const head = e[`${stream}_head`];
    const tail = e[`${stream}_tail`];
    if (!head && !tail) continue;
    print(`${stream} (first 1 KiB):\n${indent(head ?? '')}`);
    if (tail !== head) print(`${stream} (last 1 KiB):\n${indent(tail ?? '')}`);
  }
}

function printDecision(d: DecisionSnapshot, calls: ExecutionSnapshot[], print: Print): void {
  print(`decision ${cell(d.id)}`);
  print(`  time           ${isoFromNs(d.time_ns)}`);
  print(`  model          ${cell(d.model ?? '-')}`);
  print(`  run            ${cell(d.run_id ?? '-')}`);
  print(`  prompt sha256  ${cell(d.prompt_sha256)}`);
  print(`  calls          ${calls.map((c) => cell(`${c.id} (${c.tool}, ${c.status})`)).join('\n                 ') || '-'}`);
  print(`output:\n${indent(d.output)}`);
}

async function exportCommand(args: string[], print: Print): Promise<number> {
  const { values, positionals } = parse(args, { format: { type: 'string' }, output: { type: 'string' }, store: { type: 'string' } }, true);
  if (values.help) return (print(help), EXIT_OK);
  if (positionals.length > 0) throw new UsageError('snapshots export takes no arguments; use --output FILE to write a file.');
  if ((values.format ?? 'jsonl') !== 'jsonl') throw new UsageError(`bad --format ${values.format}: only jsonl is supported.`);
  const store = await openExisting(values.store);
  if (!store) throw noStore(values.store);
  try {
    if (values.output !== undefined) {
      const ids: string[] = [];
      const n = await writeJsonl(
        values.output,
        tap(store.export(), (r) => ids.push(r.id)),
        '--output',
      );
      // The file is on disk (fsynced): these records now have a copy outside the store.
      await store.markArchived(ids);
      process.stderr.write(`corral: exported ${n} record${n === 1 ? '' : 's'} to ${cell(values.output)} (marked archived)\n`);
    } else {
      for await (const record of store.export()) print(JSON.stringify(record));
    }
    return EXIT_OK;
  } finally {
    await store.close();
  }
}

async function pruneCommand(args: string[], print: Print): Promise<number> {
  const { values, positionals } = parse(
    args,
    { 'older-than': { type: 'string' }, keep: { type: 'string' }, archive: { type: 'string' }, store: { type: 'string' } },
    true,
  );
  if (values.help) return (print(help), EXIT_OK);
  if (positionals.length > 0) throw new UsageError('snapshots prune takes --older-than DURATION or --keep N, not arguments.');
  if ((values['older-than'] === undefined) === (values.keep === undefined)) {
    throw new UsageError('give one of --older-than DURATION (e.g. 30d) or --keep N.');
  }
  let olderThan: bigint | undefined;
  let keep: number | undefined;
  if (values['older-than'] !== undefined)
    olderThan = BigInt(nowNs()) - BigInt(parseDuration(values['older-than'], '--older-than')) * 1_000_000n;
  if (values.keep !== undefined) {
    keep = Number(values.keep);
    if (!Number.isInteger(keep) || keep < 0) throw new UsageError(`bad --keep ${values.keep}: a whole number of executions to keep.`);
  }
  // A database has no folder to keep the archive beside: the archive is named.
  if (isPostgresUrl(values.store ?? defaultStorePath()) && values.archive === undefined) {
    throw new UsageError('a PostgreSQL store has no folder to keep the archive beside: give --archive FILE.');
  }
  const store = await openExisting(values.store);
  if (!store) return (print('Nothing to prune (no store yet).'), EXIT_OK);
  const isFile = !isPostgresUrl(values.store ?? defaultStorePath());
  const before = fileBytes(store.location);
  try {
    const stamp = new Date().toISOString().replace(/[:.]/g, '-');
    const archivePath = absoluteAsGiven(values.archive ?? join(dirname(store.location), 'archive', `snapshots-${stamp}.jsonl`));
    const removed = await store.prune({
      ...(olderThan !== undefined ? { olderThan } : {}),
      ...(keep !== undefined ? { keep } : {}),
      // Durable on disk before the store deletes anything.
      archive: async (records) => void (await writeJsonl(archivePath, records, '--archive')),
    });
    if (removed.length === 0) return (print('Nothing to prune.'), EXIT_OK);
    const executions = removed.filter((r) => r.kind === 'execution').length;
    print(
      `Removed ${executions} execution${executions === 1 ? '' : 's'} and ${removed.length - executions} decision${removed.length - executions === 1 ? '' : 's'}.`,
    );
    print(`Archive: ${archivePath}`);
    if (isFile) print(`Store: ${megabytes(before)} → ${megabytes(fileBytes(store.location))}`);
    return EXIT_OK;
  } finally {
    await store.close();
  }
}

/** Write records as JSONL to a new file and fsync it (and its folder) before returning. */
async function writeJsonl(
  path: string,
  records: Iterable<SnapshotRecord> | AsyncIterable<SnapshotRecord>,
  flag: '--output' | '--archive',
): Promise<number> {
  try {
    return await writeJsonlFile(path, records);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException | null)?.code;
    // The store's own failures (E_STORE) pass; a file the user named that cannot be written is theirs to change.
    if (err instanceof CorralError || typeof code !== 'string') throw err;
    const why =
      err instanceof FolderError
        ? err.message
        : code === 'EEXIST'
          ? // O_EXCL refuses a link too, even one to nothing: "it exists" would send the user looking for a file.
            await brokenLink(path).then((link) =>
              link
                ? `${link} is there, and Corral never writes an export or an archive through a link`
                : 'it exists, and Corral never overwrites an export or an archive',
            )
          : (err as Error).message;
    throw new CorralError(ErrorCodes.INPUT_VALIDATION, `Cannot write ${path} (${flag}): ${why}`, { option: flag, cause: code });
  }
}

async function writeJsonlFile(path: string, records: Iterable<SnapshotRecord> | AsyncIterable<SnapshotRecord>): Promise<number> {
  // The folder the kernel will open the file in: `link/../x` is beside the link's target, not here.
  await makeFolders(dirname(path));
  const file = await open(path, 'wx'); // never overwrite an earlier archive
  let n = 0;
  try {
    let chunk = '';
    for await (const r of records) {
      chunk += JSON.stringify(r) + '\n';
      n++;
      if (chunk.length > 1 << 20) await file.write(chunk), (chunk = '');
    }
    await file.write(chunk);
    await file.sync();
  } finally {
    await file.close();
  }
  const dir = await open(dirname(path), 'r');
  try {
    await dir.sync();
  } finally {
    await dir.close();
  }
  return n;
}

/** What is at `path` when it is a symbolic link that opens nothing: one to a missing target, or one that loops. */
async function brokenLink(path: string): Promise<string | undefined> {
  const isLink = await lstat(path).then(
    (st) => st.isSymbolicLink(),
    () => false,
  );
  if (!isLink) return undefined;
  return stat(path).then(
    () => undefined,
    (err: NodeJS.ErrnoException) => (err.code === 'ELOOP' ? 'a symbolic link that loops' : 'a symbolic link that leads nowhere'),
  );
}

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** "90s", "15m", "36h", "30d", "2w", "1h30m" → milliseconds. */
export function parseDuration(text: string, flag = 'duration'): number {
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d|w)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== text) {
    throw new UsageError(`bad ${flag} ${JSON.stringify(text)}: use a duration like 90s, 15m, 36h, 30d or 2w.`);
  }
  return parts.reduce((ms, p) => ms + Number(p[1]) * UNITS[p[2]!]!, 0);
}

/** --since: a duration back from now ("2h") or a date ("2026-11-29", "2026-11-29T09:00Z"). */
export function parseSince(text: string): string {
  if (/^(\d+(\.\d+)?(ms|s|m|h|d|w))+$/.test(text)) {
    return (BigInt(nowNs()) - BigInt(Math.round(parseDuration(text, '--since'))) * 1_000_000n).toString();
  }
  const ms = Date.parse(text);
  if (Number.isNaN(ms))
    throw new UsageError(`bad --since ${JSON.stringify(text)}: a duration back from now (2h, 7d) or a date (2026-11-29T09:00Z).`);
  return nsFromDate(ms);
}

/** The bytes a store takes on disk: the file and its WAL. */
function fileBytes(location: string): number {
  const size = (path: string) => {
    try {
      return statSync(path).size;
    } catch {
      return 0;
    }
  };
  return size(location) + size(`${location}-wal`);
}

function megabytes(bytes: number): string {
  return `${(bytes / 1048576).toFixed(1)} MB`;
}

/** Pass records through, telling `seen` about each. */
async function* tap(records: AsyncIterable<SnapshotRecord>, seen: (r: SnapshotRecord) => void): AsyncIterable<SnapshotRecord> {
  for await (const r of records) {
    seen(r);
    yield r;
  }
}

function pretty(json: string): string {
  try {
    return JSON.stringify(JSON.parse(json), null, 2);
  } catch {
    return json;
  }
}
