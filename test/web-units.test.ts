// apps/web's pure parts, in Node:
// - js-diff.ts, the benchmark's pure-JS baseline, must give exactly the
//   diff-summary tool's answer (or the comparison would be unfair), checked
//   on real git output and on the benchmark's synthetic diffs;
// - schema-form.ts, the advanced panel's input form from an input_schema;
// - history.ts, reading summaries back from execution snapshots;
// - read-file.ts, telling a binary file from a text diff by its first bytes
//   (as git does), and i18n.ts's sizes (a file's bytes, in SI units);
// - review-model.ts, the review panel's step rows and outcomes, folded from
//   journals the real engine writes running patch-review.yaml (fake tools).
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { summarizeDiff } from '../apps/web/src/js-diff.js';
import { FAILURE_KINDS, failureKind } from '../apps/web/src/failure.js';
import { STRINGS } from '../apps/web/src/i18n.js';
import { FormError, fieldsFromSchema, initialValue, inputFromValues } from '../apps/web/src/schema-form.js';
import { entryFromSnapshot, historyEntries, inputOf } from '../apps/web/src/history.js';
import { classifyHead } from '../apps/web/src/read-file.js';
import { formatBytes, formatNumber } from '../apps/web/src/i18n.js';
import { relativeTime } from '../apps/web/src/history.js';
import { firstPathOf, reviewOutcome, stepIdsOf, stepRows } from '../apps/web/src/review-model.js';
import { loadWorkflow, resumeWorkflow, runWorkflow } from '@corral/workflow';
import { ApprovalDesk, MemoryJournal, Tools, failure, host, ok } from './workflow/helpers.js';
import { syntheticDiff } from '../bench/diffs.js';
import type { ExecutionSnapshot } from '@corral/core';
import { runTool } from './helpers/corral.js';
import { diffTrees, type Tree } from './helpers/gitdiff.js';

function lines(n: number, prefix: string): string {
  let s = '';
  for (let i = 1; i <= n; i++) s += `${prefix} ${i}\n`;
  return s;
}

function blob(seed: number): Uint8Array {
  const b = new Uint8Array(300);
  for (let i = 0; i < b.length; i++) b[i] = (seed * 31 + i * 7) & 0xff;
  b[3] = 0;
  return b;
}

const before: Tree = {
  'a/renamed.txt': lines(20, 'r'),
  'b/binary.bin': blob(1),
  'c/deleted.txt': lines(5, 'd'),
  'd/mode.sh': '#!/bin/sh\n',
  'e/été.txt': 'x\ny',
  'f/link': { symlink: 'target' },
  'g/space name.txt': lines(4, 's'),
  'h/crlf.txt': 'a\r\nb\r\n',
  'i/tricky.md': 'intro\n-- x\nkeep\n',
  'j/pure.txt': lines(3, 'p'),
};
const after: Tree = {
  'a/moved/renamed.txt': lines(20, 'r').replace('r 7\n', 'r seven\n'),
  'b/binary.bin': blob(2),
  'd/mode.sh': { content: '#!/bin/sh\n', executable: true },
  'e/été.txt': 'x\nz\n',
  'f/link': 'now a file\n',
  'g/space name.txt': lines(4, 's') + 'five\n',
  'h/crlf.txt': 'a\r\nB\r\nc\r\n',
  'i/tricky.md': 'intro\n++ y\nkeep\n--- a\n',
  'j/other.txt': lines(3, 'p'),
  'k/new.txt': lines(9, 'n'),
};

async function toolSays(diff: string, language: 'en' | 'zh'): Promise<unknown> {
  const r = await runTool('diff-summary', { diff, language });
  if (!r.ok) return { error: (r.error?.details as { tool_error?: { message?: string } } | undefined)?.tool_error?.message };
  return r.output;
}

function jsSays(diff: string, language: 'en' | 'zh'): unknown {
  try {
    return summarizeDiff(diff, language);
  } catch (err) {
    return { error: (err as Error).message };
  }
}

describe('js-diff (the benchmark baseline) answers exactly as the diff-summary tool', () => {
  const git = diffTrees(before, after);
  const copies = diffTrees(
    { 'src/a.ts': lines(30, 'a') },
    { 'src/a.ts': lines(30, 'a'), 'src/b.ts': lines(30, 'a') + 'more\n' },
    { args: ['-C', '--find-copies-harder'] },
  );
  const binaryPatch = diffTrees({ 'x.bin': blob(3) }, { 'x.bin': blob(4) }, { patchArgs: ['--binary'] });
  const cases: Record<string, string> = {
    'real git diff: renames, binary, deletions, modes, type change, CRLF, quoted and spaced names': git.diff,
    'git diff -C: copies': copies.diff,
    'git diff --binary': binaryPatch.diff,
    'the bundled example': (
      JSON.parse(readFileSync(new URL('../wasm-tools/diff-summary/examples/example.diff.json', import.meta.url), 'utf8')) as {
        diff: string;
      }
    ).diff,
    'the benchmark diff, 100 KB': syntheticDiff(100 * 1024),
    'plain diff -u': '--- old.txt\t2024-01-01 00:00:00\n+++ new.txt\t2024-01-02 00:00:00\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n',
    'empty: no changes': '  \n',
    'not a diff': 'hello\nworld\n',
    'hunks without files': '@@ -1 +1 @@\n-a\n+b\n',
    'malformed hunk header': 'diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @\n',
    'truncated mid-line, inside a hunk': git.diff.slice(0, git.diff.indexOf('+r seven') + 4),
    'truncated after a line, inside a hunk': git.diff.slice(0, git.diff.indexOf('+r seven') + 9),
    'truncated in a hunk header': git.diff.slice(0, git.diff.indexOf('@@ -') + 8),
    'a hunk cut short by the next file, garbage in a hunk, a bad @@ line, a hunk longer than its header': [
      'diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n-b\n',
      'diff --git a/y b/y\n--- a/y\n+++ b/y\n@@ -1,2 +1,2 @@\n-a\ngarbage\n+b\n',
      'diff --git a/z b/z\n--- a/z\n+++ b/z\n@@ -1,q +1 @@\n-a\n+b\n@@ -5 +5 @@\n-c\n+d\n',
      'diff --git a/w b/w\n--- a/w\n+++ b/w\n@@ -1 +1 @@\n-a\n+b\n+extra\n@@ -5 +5 @@\n-c\n+d\n',
    ].join(''),
  };
  for (const [name, diff] of Object.entries(cases)) {
    it(name, async () => {
      for (const language of ['en', 'zh'] as const) expect(jsSays(diff, language), language).toEqual(await toolSays(diff, language));
      // The damaged ones are reported as such (the comparison above is not between two silences).
      if (/truncated|cut short/.test(name)) expect((jsSays(diff, 'en') as { problems?: unknown[] }).problems?.length).toBeGreaterThan(0);
    });
  }
});

describe('failures are labelled as what they are (failure.ts), from what the runtime really reports', () => {
  const many = syntheticDiff(2_000_000);
  const kindOf = (r: Awaited<ReturnType<typeof runTool>>) => {
    const toolError = (r.error?.details as { tool_error?: { message?: string } } | undefined)?.tool_error?.message;
    return failureKind(r.error?.code, toolError ?? r.error?.message);
  };

  it('not a diff, output over the limit, out of memory, timed out, too large; each kind has a title, advice and label in both languages', async () => {
    expect(kindOf(await runTool('diff-summary', { diff: 'hello\n' }))).toBe('not-diff');
    expect(kindOf(await runTool('diff-summary', { diff: many }, { outputLimitBytes: 1000 }))).toBe('output');
    expect(kindOf(await runTool('diff-summary', { diff: many }, { memoryMb: 2 }))).toBe('memory');
    expect(kindOf(await runTool('diff-summary', { diff: many }, { timeoutMs: 1 }))).toBe('time');
    expect(kindOf(await runTool('diff-summary', { diff: 'x'.repeat(64 * 2 ** 20 + 1) }))).toBe('too-large');
    // A history entry has only the snapshot's code and message: the same label.
    const r = await runTool('diff-summary', { diff: many }, { outputLimitBytes: 1000 });
    expect(failureKind(r.error?.code, r.error?.message)).toBe('output');
    for (const lang of ['en', 'zh'] as const) {
      const s = STRINGS[lang];
      for (const k of FAILURE_KINDS) {
        expect(s.failTitle[k], `${lang} ${k}`).not.toBe('');
        expect(s.failAdvice[k], `${lang} ${k}`).not.toBe('');
        expect(s.failLabel[k], `${lang} ${k}`).not.toBe('');
      }
      expect(new Set(FAILURE_KINDS.map((k) => s.failLabel[k])).size).toBe(FAILURE_KINDS.length);
    }
  }, 60_000);
});

describe('schema-form', () => {
  const diffSpec = JSON.parse(readFileSync(new URL('../wasm-tools/diff-summary/tool-spec.json', import.meta.url), 'utf8'));
  const statsSpec = JSON.parse(readFileSync(new URL('../wasm-tools/file-stats/tool-spec.json', import.meta.url), 'utf8'));

  it('makes a text area for a long string and a select for an enum', () => {
    const fields = fieldsFromSchema(diffSpec.input_schema)!;
    expect(fields.map((f) => [f.name, f.kind, f.required])).toEqual([
      ['diff', 'text', true],
      ['language', 'enum', false],
    ]);
    expect(fields[1]!.options).toEqual(['en', 'zh']);
    expect(initialValue(fields[1]!)).toBe('"en"');
    expect(inputFromValues(fields, { diff: 'x', language: '"zh"' })).toEqual({ diff: 'x', language: 'zh' });
    // An optional field left empty is left out, so the tool's default applies.
    expect(inputFromValues(fields, { diff: '', language: '' })).toEqual({ diff: '' });
  });

  it('makes single-line inputs for short strings', () => {
    const fields = fieldsFromSchema(statsSpec.input_schema)!;
    for (const f of fields) expect(['string', 'integer', 'number', 'boolean', 'enum', 'json']).toContain(f.kind);
  });

  it('handles numbers, booleans, JSON fallbacks and required fields', () => {
    const fields = fieldsFromSchema({
      type: 'object',
      required: ['n', 'tags'],
      properties: {
        n: { type: 'integer', minimum: 1 },
        ratio: { type: 'number' },
        dry: { type: 'boolean' },
        strict: { type: 'boolean', default: true },
        tags: { type: 'array', items: { type: 'string' } },
        opts: { type: 'object' },
      },
    })!;
    expect(fields.map((f) => f.kind)).toEqual(['integer', 'number', 'boolean', 'boolean', 'json', 'json']);
    expect(inputFromValues(fields, { n: '3', ratio: '', dry: false, strict: false, tags: '["a","b"]', opts: '' })).toEqual({
      n: 3,
      strict: false,
      tags: ['a', 'b'],
    });
    expect(() => inputFromValues(fields, { n: '', tags: '[]' })).toThrow(FormError);
    expect(() => inputFromValues(fields, { n: '1', tags: '[oops' })).toThrow(expect.objectContaining({ field: 'tags' }));
  });

  it('asks for raw JSON when the schema is not an object with properties', () => {
    expect(fieldsFromSchema(true)).toBeNull();
    expect(fieldsFromSchema({ type: 'array' })).toBeNull();
    expect(fieldsFromSchema({ type: 'object' })).toBeNull();
  });
});

describe('history entries from execution snapshots', () => {
  const snapshot = (over: Partial<ExecutionSnapshot>): ExecutionSnapshot => ({
    id: 'id-1',
    status: 'ok',
    tool: 'diff-summary',
    version: '1.0.0',
    decision_id: null,
    intent_ns: '1700000000000000000',
    result_ns: '1700000000010000000',
    duration_ms: 3.5,
    exit_code: 0,
    error_code: null,
    error_message: null,
    wasm_sha256: 'a'.repeat(64),
    input_sha256: 'b'.repeat(64),
    input_json: JSON.stringify({ diff: 'd', language: 'zh' }),
    stdout_sha256: null,
    stdout_head: '',
    stdout_tail: '',
    stderr_head: '',
    stderr_tail: '',
    peak_memory_bytes: null,
    ...over,
  });

  it('reads a short output whole, and its input back', () => {
    const output = summarizeDiff(syntheticDiff(300), 'zh');
    const text = JSON.stringify(output);
    const e = entryFromSnapshot(snapshot({ stdout_head: text, stdout_tail: text }));
    expect(e.output).toEqual(output);
    expect(e.language).toBe('zh');
    expect(e.when.toISOString()).toBe('2023-11-14T22:13:20.000Z');
    expect(inputOf(e.snapshot)).toEqual({ diff: 'd', language: 'zh' });
  });

  it('tells the language without the input, as the history lists entries (withInput: false)', () => {
    for (const language of ['zh', 'en'] as const) {
      const text = JSON.stringify(summarizeDiff(syntheticDiff(50_000), language));
      const e = entryFromSnapshot(snapshot({ input_json: null, stdout_head: text.slice(0, 1024), stdout_tail: text.slice(-1024) }));
      expect(e.language).toBe(language);
      expect(e.hasInput).toBe(true);
      expect(inputOf(e.snapshot)).toBeNull();
    }
  });

  it('reads totals and summary from the tail of a long output', () => {
    const output = summarizeDiff(syntheticDiff(50_000), 'en');
    const text = `${JSON.stringify(output)}\n`;
    const e = entryFromSnapshot(snapshot({ stdout_head: text.slice(0, 1024), stdout_tail: text.slice(-1024) }));
    expect(e.output).toBeNull();
    expect(e.totals).toEqual(output.totals);
    expect(e.summary).toBe(output.summary);
    expect(e.firstPath).toBe(output.files[0]!.path);
  });

  it('reads totals and summary from the tail of a long output that lists problems', () => {
    const whole = syntheticDiff(50_000);
    const output = summarizeDiff(whole.slice(0, whole.lastIndexOf('\n+') + 3), 'en');
    expect(output.problems?.[0]?.kind).toBe('truncated');
    const text = `${JSON.stringify(output)}\n`;
    const e = entryFromSnapshot(snapshot({ stdout_head: text.slice(0, 1024), stdout_tail: text.slice(-1024) }));
    expect(e.totals).toEqual(output.totals);
    expect(e.summary).toBe(output.summary);
  });

  it("keeps a failed call's own message", () => {
    const e = entryFromSnapshot(
      snapshot({
        status: 'failed',
        exit_code: 1,
        error_code: 'E_UNEXPECTED_EXIT',
        error_message: 'diff-summary exited with code 1: x',
        stdout_head: '{"error":{"message":"the input is not a unified diff"}}\n',
      }),
    );
    expect(e.error).toBe('the input is not a unified diff');
  });

  it('shows each distinct input once, newest first', () => {
    const list = historyEntries([
      snapshot({ id: 'new' }),
      snapshot({ id: 'old' }),
      snapshot({ id: 'other', input_sha256: 'c'.repeat(64) }),
    ]);
    expect(list.map((e) => e.id)).toEqual(['new', 'other']);
  });
});

describe('the review panel (review-model.ts) on journals of patch-review.yaml', () => {
  const workflow = loadWorkflow(readFileSync(new URL('../examples/workflows/patch-review.yaml', import.meta.url), 'utf8'), {
    source: 'patch-review.yaml',
  });
  const inputs = { diff: 'diff --git a/src/app.js b/src/app.js\n', workspace: { kind: 'opfs', path: 'w' } };
  /** The bundled tools' answers for a one-line change that applies; grep fails once when asked to. */
  const tools = (grepFailsFirst = false) =>
    new Tools({
      'diff-summary': () => ok('diff-summary', { files: [], totals: { files: 1, additions: 1, deletions: 0 }, summary: '1 file changed' }),
      'apply-patch': (input) =>
        ok(
          'apply-patch',
          input.check ? { applies: true, applied: false } : { applies: true, applied: true, files: [{ path: 'src/app.js' }] },
        ),
      'file-stats': () => ok('file-stats', { totals: { files: 2, lines: 4 } }),
      grep: (_input, n) =>
        grepFailsFirst && n === 0 ? failure('grep', 'E_RESOURCE_EXHAUSTED', 'too many matches') : ok('grep', { count: 0, matches: [] }),
    });
  const states = (rows: ReturnType<typeof stepRows>) => Object.fromEntries(rows.map((r) => [r.id, r.state]));

  it('shows a run waiting at sign-off, with the time each ended step took, then applied once approved', async () => {
    const journal = new MemoryJournal();
    const desk = new ApprovalDesk();
    const h = host(journal, tools(), { desk, concurrency: 1 });
    const first = await runWorkflow(workflow, inputs, h);
    const ids = stepIdsOf(journal.runs.get(first.runId)!.definition);
    expect(ids).toEqual(['summary', 'check', 'stats', 'markers', 'leftovers', 'sign-off', 'apply', 'stats-after']);
    const waiting = stepRows(ids, await journal.listWorkflowEvents(first.runId));
    expect(states(waiting)).toEqual({
      summary: 'succeeded',
      check: 'succeeded',
      stats: 'succeeded',
      markers: 'succeeded',
      leftovers: 'skipped',
      'sign-off': 'waiting',
      apply: 'pending',
      'stats-after': 'pending',
    });
    // The test clock moves 1 ms per event: started, then succeeded.
    expect(waiting.find((r) => r.id === 'summary')).toMatchObject({ ms: 1, tool: 'diff-summary', attempts: 1 });
    expect(waiting.find((r) => r.id === 'leftovers')!.note).toBe('condition is false: steps.summary.output.totals.additions > inputs.big');
    expect(waiting.find((r) => r.id === 'sign-off')).toMatchObject({ ms: null, note: 'Apply this patch? 1 file changed' });
    expect(reviewOutcome(journal.runs.get(first.runId)!)).toBe('waiting');

    desk.decide('approval-1', 'approved', 'ada', 'ship it');
    await resumeWorkflow(first.runId, h);
    const done = stepRows(ids, await journal.listWorkflowEvents(first.runId));
    expect(Object.values(states(done))).toEqual([
      'succeeded',
      'succeeded',
      'succeeded',
      'succeeded',
      'skipped',
      'succeeded',
      'succeeded',
      'succeeded',
    ]);
    expect(done.find((r) => r.id === 'sign-off')).toMatchObject({ note: 'approved by ada: ship it', tool: null });
    expect(done.find((r) => r.id === 'apply')!.output).toMatchObject({ applied: true, files: [{ path: 'src/app.js' }] });
    expect(reviewOutcome(journal.runs.get(first.runId)!)).toBe('applied');
  });

  it('shows a rejected sign-off as the failed step and the run as rejected', async () => {
    const journal = new MemoryJournal();
    const desk = new ApprovalDesk();
    const h = host(journal, tools(), { desk });
    const first = await runWorkflow(workflow, inputs, h);
    desk.decide('approval-1', 'rejected', 'bo', 'not now');
    await resumeWorkflow(first.runId, h);
    const rows = stepRows(stepIdsOf(workflow), await journal.listWorkflowEvents(first.runId));
    expect(rows.find((r) => r.id === 'sign-off')).toMatchObject({ state: 'failed', error: "Step 'sign-off' was rejected by bo: not now" });
    expect(rows.find((r) => r.id === 'apply')!.state).toBe('pending');
    expect(reviewOutcome(journal.runs.get(first.runId)!)).toBe('rejected');
  });

  it('shows a retried step once, succeeded after its second attempt, with both attempts in its time', async () => {
    const journal = new MemoryJournal();
    const first = await runWorkflow(workflow, inputs, host(journal, tools(true), { desk: new ApprovalDesk(), concurrency: 1 }));
    const events = await journal.listWorkflowEvents(first.runId);
    const markers = stepRows(stepIdsOf(workflow), events).find((r) => r.id === 'markers')!;
    const own = events.filter((e) => e.step === 'markers');
    expect(own.map((e) => e.kind)).toEqual(['step_started', 'step_failed', 'step_started', 'step_succeeded']);
    const span = Number(BigInt(own.at(-1)!.at_ns) - BigInt(own[0]!.at_ns)) / 1e6;
    expect(markers).toMatchObject({ state: 'succeeded', attempts: 2, error: null, ms: span });
    expect(span).toBeGreaterThan(0);
  });

  it('names the outcome of runs that did not apply', () => {
    expect(reviewOutcome({ status: 'succeeded', outputs: { applies: false, applied: false }, error: null })).toBe('does-not-apply');
    expect(reviewOutcome({ status: 'succeeded', outputs: { applies: true, applied: false }, error: null })).toBe('not-applied');
    expect(reviewOutcome({ status: 'failed', outputs: null, error: { code: 'E_UNEXPECTED_EXIT', message: 'x', step: 'summary' } })).toBe(
      'failed',
    );
    expect(reviewOutcome({ status: 'running', outputs: null, error: null })).toBe('running');
  });

  it('names a run by the first file its diff changes', () => {
    expect(firstPathOf('diff --git a/x b/x\n--- a/src/app.js\n+++ b/src/app.js\n')).toBe('src/app.js');
    expect(firstPathOf('--- a/gone.txt\n+++ /dev/null\n')).toBe('gone.txt');
    expect(firstPathOf('--- old.c\t2024-01-01\n+++ new.c\t2024-01-02\n')).toBe('new.c\t2024-01-02');
    expect(firstPathOf('no diff here')).toBeNull();
    expect(firstPathOf(undefined)).toBeNull();
  });
});

describe('binary detection (read-file.ts) and file sizes', () => {
  const utf8 = (text: string) => new TextEncoder().encode(text);

  it('calls text what git calls text, and binary a NUL or bytes that are not UTF-8', () => {
    expect(classifyHead(utf8('diff --git a/x b/x\n+é中文\n'), true)).toBe('text');
    expect(classifyHead(new Uint8Array(0), true)).toBe('text');
    expect(classifyHead(utf8('PNG\0\0'), true)).toBe('nul');
    expect(classifyHead(Uint8Array.of(0x2b, 0xe9, 0x74, 0xe9, 0x0a), true)).toBe('not-utf8'); // "+été" in Latin-1
    // A first chunk may end inside a character: not binary unless it is the whole file.
    const cut = utf8('+中').subarray(0, 2);
    expect(classifyHead(cut, false)).toBe('text');
    expect(classifyHead(cut, true)).toBe('not-utf8');
  });

  it("gives a file's size in bytes, SI units, one decimal for MB", () => {
    expect(formatBytes(999)).toBe('999 B');
    expect(formatBytes(1_000)).toBe('1.0 KB');
    expect(formatBytes(256_000)).toBe('256 KB');
    expect(formatBytes(1_000_000)).toBe('1.0 MB');
    expect(formatBytes(50_000_000)).toBe('50.0 MB');
  });

  it('writes numbers as Intl does for English and Chinese, without loading Intl', () => {
    for (const n of [0, 7, 999, 1_000, 1_031, 12_345, 999_999, 1_000_000, 123_456_789, -1_031, 2.5, 1234.75]) {
      expect(formatNumber(n)).toBe(new Intl.NumberFormat('en', { maximumFractionDigits: 20 }).format(n));
      expect(formatNumber(n)).toBe(new Intl.NumberFormat('zh-CN', { maximumFractionDigits: 20 }).format(n));
    }
  });

  it("says when a history entry was made in the page's language", () => {
    const now = Date.UTC(2026, 11, 2, 12, 0, 0);
    const ago = (seconds: number, lang: 'en' | 'zh') => relativeTime(new Date(now - seconds * 1000), lang, now);
    expect([ago(3, 'en'), ago(-30, 'en'), ago(60, 'en'), ago(300, 'en'), ago(3600, 'en'), ago(5 * 3600, 'en')]).toEqual([
      'just now',
      'just now', // a clock a little behind another tab's
      '1 minute ago',
      '5 minutes ago',
      '1 hour ago',
      '5 hours ago',
    ]);
    expect([ago(86_400, 'en'), ago(3 * 86_400, 'en')]).toEqual(['yesterday', '3 days ago']);
    expect([ago(3, 'zh'), ago(300, 'zh'), ago(3600, 'zh'), ago(86_400, 'zh'), ago(3 * 86_400, 'zh')]).toEqual([
      '刚刚',
      '5 分钟前',
      '1 小时前',
      '昨天',
      '3 天前',
    ]);
    const old = new Date(2026, 10, 30, 9, 0); // local time, as the page shows it
    expect(relativeTime(old, 'en', old.getTime() + 30 * 86_400_000)).toBe('Nov 30, 2026');
    expect(relativeTime(old, 'zh', old.getTime() + 30 * 86_400_000)).toBe('2026年11月30日');
  });
});
