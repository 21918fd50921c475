/**
 * History: earlier summaries, read back from the execution snapshots the
 * runtime records in IndexedDB for every call. A snapshot keeps the input
 * (unless the caller opted out), the first and last KiB of stdout, and the
 * outcome, so an entry can show its totals without rerunning anything, and
 * be reopened: from its stdout when that was short enough to be kept whole,
 * else by running the kept input again.
 *
 * The list is read without the inputs (`withInput: false`: metadata only,
 * however large the diffs were); an entry's input is read when it is reopened.
 */
import type { ExecutionSnapshot } from '@corral/core';
import { STRINGS } from './i18n.js';
import { isDiffSummary, type DiffSummary, type Language, type Totals } from './summary.js';

export interface HistoryEntry {
  id: string;
  when: Date;
  status: ExecutionSnapshot['status'];
  /** The summary's language, told from its sentence (the input, which says it, is not read for the list). */
  language: Language;
  durationMs: number | null;
  /** Known from the stdout tail of a successful call. */
  totals: Totals | null;
  summary: string | null;
  firstPath: string | null;
  /** The tool's error message for a failed call. */
  error: string | null;
  /** The runtime's error code of a failed call (E_RESOURCE_EXHAUSTED, ...), for its label. */
  errorCode: string | null;
  /** Whether the call had an input to keep (a recorded one is read on reopening). */
  hasInput: boolean;
  /** The whole output, when stdout fitted in the kept head. */
  output: DiffSummary | null;
  snapshot: ExecutionSnapshot;
}

const TAIL = /"totals":(\{[^{}]*\}),"summary":("(?:[^"\\]|\\.)*")\}\s*$/;
const FIRST_PATH = /^\{"files":\[\{"path":("(?:[^"\\]|\\.)*")/;
/** Han characters: the Chinese summary sentence (and the tool's Chinese errors) have them, the English ones never. */
const HAN = /[\u3400-\u9fff]/;

function tryJson(text: string | null): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

export function entryFromSnapshot(s: ExecutionSnapshot): HistoryEntry {
  const head = s.stdout_head ?? '';
  const whole = tryJson(head);
  const output = isDiffSummary(whole) ? whole : null;
  let totals: Totals | null = output?.totals ?? null;
  let summary: string | null = output?.summary ?? null;
  if (!output && s.stdout_tail) {
    const m = TAIL.exec(s.stdout_tail);
    if (m) {
      totals = tryJson(m[1]!) as Totals;
      summary = tryJson(m[2]!) as string;
    }
  }
  const first = FIRST_PATH.exec(head);
  let error: string | null = null;
  if (s.status !== 'ok') {
    const toolError = (whole as { error?: { message?: unknown } } | undefined)?.error?.message;
    error = typeof toolError === 'string' ? toolError : (s.error_message ?? s.error_code ?? s.status);
  }
  return {
    id: s.id,
    when: new Date(Number(BigInt(s.intent_ns) / 1_000_000n)),
    status: s.status,
    language: HAN.test(summary ?? error ?? '') ? 'zh' : 'en',
    durationMs: s.duration_ms,
    totals,
    summary,
    firstPath: output?.files[0]?.path ?? (first ? (tryJson(first[1]!) as string) : null),
    error,
    errorCode: s.error_code,
    hasInput: s.input_sha256 !== null,
    output,
    snapshot: s,
  };
}

/** Newest first, one entry per distinct input (a reopened summary moves to the top instead of repeating). */
export function historyEntries(snapshots: ExecutionSnapshot[]): HistoryEntry[] {
  const seen = new Set<string>();
  const entries: HistoryEntry[] = [];
  for (const s of snapshots) {
    const key = s.input_sha256 ?? s.id;
    if (seen.has(key)) continue;
    seen.add(key);
    entries.push(entryFromSnapshot(s));
  }
  return entries;
}

/** The diff and language a snapshot (as getExecution reads it) ran with, or null when the input was not kept. */
export function inputOf(snapshot: ExecutionSnapshot): { diff: string; language: Language } | null {
  const input = tryJson(snapshot.input_json) as { diff?: unknown; language?: unknown } | undefined;
  if (!input || typeof input.diff !== 'string') return null;
  return { diff: input.diff, language: input.language === 'zh' ? 'zh' : 'en' };
}

/**
 * "3 minutes ago", in the page's language (written by hand, not with
 * Intl.RelativeTimeFormat: see formatNumber). A time a little ahead of the
 * clock (another tab's, say) reads "just now".
 */
export function relativeTime(when: Date, lang: Language, now = Date.now()): string {
  const t = STRINGS[lang];
  const s = Math.max(0, Math.round((now - when.getTime()) / 1000));
  if (s < 45) return t.ago(0, 'second');
  if (s < 45 * 60) return t.ago(Math.round(s / 60), 'minute');
  if (s < 22 * 3600) return t.ago(Math.round(s / 3600), 'hour');
  if (s < 7 * 86400) return t.ago(Math.max(1, Math.round(s / 86400)), 'day');
  return t.onDate(when.getFullYear(), when.getMonth() + 1, when.getDate());
}
