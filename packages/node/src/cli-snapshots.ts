/**
 * `corral snapshots list|show|export|prune` and `corral replay`: reading
 * back what ran, trimming the store, and re-running a recorded call.
 */
import { existsSync } from 'node:fs';
import { mkdir, open } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import {
  CorralError,
  ErrorCodes,
  MemoryStore,
  isoFromNs,
  nowNs,
  nsFromDate,
  type DecisionSnapshot,
  type ExecutionFilter,
  type ExecutionSnapshot,
  type ExecutionStatus,
  type SnapshotRecord,
  type Tool,
} from '@corral/core';
import { Corral } from './corral.js';
import { parseMountFlag } from './mounts.js';
import { SqliteStore, defaultStorePath } from './store-sqlite.js';
import { EXIT_OK, EXIT_TOOL_FAILED, EXIT_USAGE, HELP, UsageError } from './cli.js';
import { forTerminal } from './terminal.js';

/** Prints to the terminal; `main` escapes what could act on it (see terminal.ts). */
type Print = (text: string) => void;

/** A recorded field shown on one line (a table cell, `name  value`): a newline in it must not fake a row. */
const cell = (value: string) => forTerminal(value, { oneLine: true });

function parse<T extends NonNullable<ParseArgsConfig['options']>>(args: string[], options: T, allowPositionals: boolean) {
  try {
    return parseArgs({ args, options: { ...options, help: { type: 'boolean', short: 'h' } }, allowPositionals, strict: true });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

const STATUSES: ExecutionStatus[] = ['ok', 'failed', 'interrupted'];

export async function snapshotsCommand(args: string[], print: Print): Promise<number> {
  const [sub, ...rest] = args;
  switch (sub) {
    case undefined:
    case '-h':
    case '--help':
      print(HELP.snapshots!);
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

/** Open the store named by --store (else the default) that must already exist. */
async function openExisting(path: string | undefined): Promise<SqliteStore | undefined> {
  const location = resolve(path ?? defaultStorePath());
  if (!existsSync(location)) return undefined;
  return SqliteStore.open(location);
}

function noStore(path: string | undefined): CorralError {
  const location = resolve(path ?? defaultStorePath());
  return new CorralError(ErrorCodes.STORE, `No snapshot store at ${location} (nothing recorded yet, or pass --store PATH)`, { store: location });
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
  if (values.help) return print(HELP.snapshots!), EXIT_OK;
  if (positionals.length > 0) throw new UsageError(`snapshots list takes no arguments (got ${positionals.join(' ')}); filter with --tool, --since, --error, --decision, --status.`);
  const filter: ExecutionFilter = {};
  if (values.tool !== undefined) filter.tool = values.tool;
  if (values.since !== undefined) filter.since = parseSince(values.since);
  if (values.error !== undefined) filter.errorCode = values.error;
  if (values.decision !== undefined) filter.decisionId = values.decision;
  if (values.status !== undefined) {
    if (!STATUSES.includes(values.status as ExecutionStatus)) throw new UsageError(`bad --status ${values.status}: use ${STATUSES.join(', ')}.`);
    filter.status = values.status as ExecutionStatus;
  }
  const limit = values.limit === undefined ? 50 : Number(values.limit);
  if (!Number.isInteger(limit) || limit < 0) throw new UsageError(`bad --limit ${values.limit}: a whole number (0 for no limit).`);
  if (limit > 0) filter.limit = limit;

  const store = await openExisting(values.store);
  const found = store ? await store.listExecutions(filter) : [];
  await store?.close();
  if (values.json) return print(JSON.stringify(found, null, 2)), EXIT_OK;
  if (found.length === 0) return print(store ? 'No snapshots match.' : `No snapshots recorded yet (${resolve(values.store ?? defaultStorePath())} does not exist).`), EXIT_OK;
  // Escaped before the widths are measured, so the columns line up as printed.
  const rows = found.map((e) =>
    [
      e.id,
      isoFromNs(e.intent_ns).slice(0, 23).replace('T', ' '),
      `${e.tool}@${e.version ?? '?'}`,
      e.status,
      e.error_code ?? '',
      e.duration_ms === null ? '' : `${e.duration_ms.toFixed(1)} ms`,
    ].map(cell),
  );
  const header = ['ID', 'TIME (UTC)', 'TOOL', 'STATUS', 'ERROR', 'DURATION'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  for (const r of [header, ...rows]) print(r.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd());
  if (filter.limit !== undefined && found.length === filter.limit) print(`(newest ${filter.limit} shown; --limit N for more, 0 for all)`);
  return EXIT_OK;
}

async function showCommand(args: string[], print: Print): Promise<number> {
  const { values, positionals } = parse(args, { json: { type: 'boolean' }, store: { type: 'string' } }, true);
  if (values.help) return print(HELP.snapshots!), EXIT_OK;
  if (positionals.length !== 1) throw new UsageError('name one snapshot id, e.g. corral snapshots show 1b9d6bcd-bbfd-4b2d-9b5d-ab8dfbbd4bed');
  const id = positionals[0]!;
  const store = await openExisting(values.store);
  if (!store) throw noStore(values.store);
  try {
    const execution = await store.getExecution(id);
    const decision = execution ? null : await store.getDecision(id);
    if (!execution && !decision) throw new CorralError(ErrorCodes.STORE, `No snapshot with id ${id} in ${store.location}`, { id });
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
  const field = (name: string, value: string | number | null) => print(`  ${name.padEnd(14)} ${value === null ? '-' : cell(String(value))}`);
  print(`execution ${cell(e.id)}`);
  field('status', e.status + (e.status === 'interrupted' ? ' (an intent with no result: the process stopped mid-call, or it is still running)' : ''));
  field('tool', `${e.tool}@${e.version ?? '?'}`);
  field('decision', e.decision_id ? `${e.decision_id}${decision ? ` (${decision.model ?? 'model ?'}, ${isoFromNs(decision.time_ns)})` : ' (pruned)'}` : null);
  field('intent', isoFromNs(e.intent_ns));
  field('result', e.result_ns === null ? null : isoFromNs(e.result_ns));
  field('duration', e.duration_ms === null ? null : `${e.duration_ms} ms`);
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
  if (values.help) return print(HELP.snapshots!), EXIT_OK;
  if (positionals.length > 0) throw new UsageError('snapshots export takes no arguments; use --output FILE to write a file.');
  if ((values.format ?? 'jsonl') !== 'jsonl') throw new UsageError(`bad --format ${values.format}: only jsonl is supported.`);
  const store = await openExisting(values.store);
  if (!store) throw noStore(values.store);
  try {
    if (values.output !== undefined) {
      const n = await writeJsonl(values.output, store.export());
      process.stderr.write(`corral: exported ${n} record${n === 1 ? '' : 's'} to ${cell(values.output)}\n`);
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
  if (values.help) return print(HELP.snapshots!), EXIT_OK;
  if (positionals.length > 0) throw new UsageError('snapshots prune takes --older-than DURATION or --keep N, not arguments.');
  if ((values['older-than'] === undefined) === (values.keep === undefined)) {
    throw new UsageError('give one of --older-than DURATION (e.g. 30d) or --keep N.');
  }
  let olderThan: bigint | undefined;
  let keep: number | undefined;
  if (values['older-than'] !== undefined) olderThan = BigInt(nowNs()) - BigInt(parseDuration(values['older-than'], '--older-than')) * 1_000_000n;
  if (values.keep !== undefined) {
    keep = Number(values.keep);
    if (!Number.isInteger(keep) || keep < 0) throw new UsageError(`bad --keep ${values.keep}: a whole number of executions to keep.`);
  }
  const store = await openExisting(values.store);
  if (!store) return print('Nothing to prune (no store yet).'), EXIT_OK;
  try {
    const stamp = new Date().toISOString().replace(/[:.]/g, '-');
    const archivePath = resolve(values.archive ?? join(dirname(store.location), 'archive', `snapshots-${stamp}.jsonl`));
    const removed = await store.prune({
      ...(olderThan !== undefined ? { olderThan } : {}),
      ...(keep !== undefined ? { keep } : {}),
      // Durable on disk before the store deletes anything.
      archive: async (records) => void (await writeJsonl(archivePath, records)),
    });
    if (removed.length === 0) return print('Nothing to prune.'), EXIT_OK;
    const executions = removed.filter((r) => r.kind === 'execution').length;
    print(`Removed ${executions} execution${executions === 1 ? '' : 's'} and ${removed.length - executions} decision${removed.length - executions === 1 ? '' : 's'}.`);
    print(`Archive: ${archivePath}`);
    return EXIT_OK;
  } finally {
    await store.close();
  }
}

/**
 * `corral replay ID`: run the recorded tool version on the recorded input
 * and compare stdout (by SHA-256), exit code and error code with the record.
 * The wasm's SHA-256 tells whether the artifact itself changed. The replay
 * is not recorded in the store: it is a check, not something an agent did.
 */
export async function replayCommand(args: string[], print: Print): Promise<number> {
  const { values, positionals } = parse(
    args,
    {
      tools: { type: 'string', multiple: true },
      mount: { type: 'string', multiple: true },
      env: { type: 'string', multiple: true },
      json: { type: 'boolean' },
      store: { type: 'string' },
    },
    true,
  );
  if (values.help) return print(HELP.replay!), EXIT_OK;
  if (positionals.length !== 1) throw new UsageError('name one execution snapshot id, e.g. corral replay 1b9d6bcd-bbfd-4b2d-9b5d-ab8dfbbd4bed');
  const id = positionals[0]!;
  const store = await openExisting(values.store);
  if (!store) throw noStore(values.store);
  let recorded: ExecutionSnapshot | null;
  try {
    recorded = await store.getExecution(id);
  } finally {
    await store.close();
  }
  if (!recorded) throw new CorralError(ErrorCodes.STORE, `No execution snapshot with id ${id} in ${store.location}`, { id });
  if (recorded.input_json === null) {
    throw new CorralError(ErrorCodes.INPUT_VALIDATION, `Execution ${id} was recorded without its input (only its hash), so it cannot be replayed`, { id });
  }
  if (recorded.version === null) {
    throw new CorralError(ErrorCodes.TOOL_NOT_FOUND, `Execution ${id} never resolved a tool (${recorded.error_code}); there is nothing to replay`, { id });
  }
  const mounts = (values.mount ?? []).map((flag) => parseMountFlag(flag));
  const env = Object.fromEntries(
    (values.env ?? []).map((pair) => {
      const eq = pair.indexOf('=');
      if (eq <= 0) throw new UsageError(`bad --env ${JSON.stringify(pair)}: expected NAME=VALUE.`);
      return [pair.slice(0, eq), pair.slice(eq + 1)];
    }),
  );

  const scratch = new MemoryStore('replay');
  const corral = await Corral.create({ toolDirs: values.tools ?? [], store: scratch, size: 1 });
  try {
    let tool: Tool;
    try {
      // The exact version recorded, not a range.
      tool = corral.registry.resolve(`${recorded.tool}@${recorded.version}`);
    } catch (err) {
      throw new CorralError(
        ErrorCodes.TOOL_NOT_FOUND,
        `${recorded.tool}@${recorded.version}, which execution ${id} ran, is not available; pass the folder it came from with --tools DIR`,
        { id, cause: (err as Error).message },
      );
    }
    const result = await corral.invokeTool(tool, JSON.parse(recorded.input_json), { mounts, env });
    const replayed = (await scratch.getExecution(result.snapshot!.id))!;
    const report = compare(recorded, replayed);
    if (values.json) print(JSON.stringify(report, null, 2));
    else printReport(report, print);
    return report.identical ? EXIT_OK : EXIT_TOOL_FAILED;
  } finally {
    await corral.close();
  }
}

interface Side {
  wasm_sha256: string | null;
  stdout_sha256: string | null;
  exit_code: number | null;
  error_code: string | null;
  stdout_head: string | null;
}

interface ReplayReport {
  id: string;
  tool: string;
  version: string | null;
  identical: boolean;
  artifact_changed: boolean;
  differences: string[];
  recorded: Side;
  replayed: Side;
}

function compare(recorded: ExecutionSnapshot, replayed: ExecutionSnapshot): ReplayReport {
  const side = (e: ExecutionSnapshot): Side => ({
    wasm_sha256: e.wasm_sha256,
    stdout_sha256: e.stdout_sha256,
    exit_code: e.exit_code,
    error_code: e.error_code,
    stdout_head: e.stdout_head,
  });
  const differences = (['wasm_sha256', 'stdout_sha256', 'exit_code', 'error_code'] as const).filter((k) => recorded[k] !== replayed[k]);
  return {
    id: recorded.id,
    tool: recorded.tool,
    version: recorded.version,
    identical: differences.length === 0,
    artifact_changed: differences.includes('wasm_sha256'),
    differences,
    recorded: side(recorded),
    replayed: side(replayed),
  };
}

function printReport(r: ReplayReport, print: Print): void {
  print(`replay of ${cell(r.id)} (${cell(`${r.tool}@${r.version}`)}): ${r.identical ? 'identical' : 'DIFFERENT'}`);
  const short = (v: string | number | null) => (v === null ? '-' : String(v).slice(0, 16));
  const line = (label: string, a: string | number | null, b: string | number | null) =>
    print(`  ${label.padEnd(14)} ${a === b ? `${short(a)} (same)` : `recorded ${short(a)}, now ${short(b)}`}`);
  line('wasm sha256', r.recorded.wasm_sha256, r.replayed.wasm_sha256);
  line('stdout sha256', r.recorded.stdout_sha256, r.replayed.stdout_sha256);
  line('exit code', r.recorded.exit_code, r.replayed.exit_code);
  line('error', r.recorded.error_code, r.replayed.error_code);
  if (r.artifact_changed) print('  The tool artifact changed since the recording (same name and version, different wasm).');
  if (r.recorded.stdout_sha256 !== r.replayed.stdout_sha256) {
    print(`recorded stdout (first 1 KiB):\n${indent(r.recorded.stdout_head ?? '')}`);
    print(`replayed stdout (first 1 KiB):\n${indent(r.replayed.stdout_head ?? '')}`);
  }
}

/** Write records as JSONL to a new file and fsync it (and its folder) before returning. */
async function writeJsonl(path: string, records: Iterable<SnapshotRecord> | AsyncIterable<SnapshotRecord>): Promise<number> {
  await mkdir(dirname(resolve(path)), { recursive: true });
  const file = await open(path, 'wx'); // never overwrite an earlier archive
  let n = 0;
  try {
    let chunk = '';
    for await (const r of records) {
      chunk += JSON.stringify(r) + '\n';
      n++;
      if (chunk.length > 1 << 20) (await file.write(chunk), (chunk = ''));
    }
    await file.write(chunk);
    await file.sync();
  } finally {
    await file.close();
  }
  const dir = await open(dirname(resolve(path)), 'r');
  try {
    await dir.sync();
  } finally {
    await dir.close();
  }
  return n;
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
function parseSince(text: string): string {
  if (/^(\d+(\.\d+)?(ms|s|m|h|d|w))+$/.test(text)) {
    return (BigInt(nowNs()) - BigInt(Math.round(parseDuration(text, '--since'))) * 1_000_000n).toString();
  }
  const ms = Date.parse(text);
  if (Number.isNaN(ms)) throw new UsageError(`bad --since ${JSON.stringify(text)}: a duration back from now (2h, 7d) or a date (2026-11-29T09:00Z).`);
  return nsFromDate(ms);
}

function pretty(json: string): string {
  try {
    return JSON.stringify(JSON.parse(json), null, 2);
  } catch {
    return json;
  }
}

/** Split on \n only: /^/m would also start lines at \r and U+2028, inside what a tool printed. */
function indent(text: string): string {
  return text.replace(/\n$/, '').split('\n').map((line) => `  ${line}`).join('\n');
}
