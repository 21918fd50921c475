// Issue 16, items 4 and 8: whatever the input, the page never blocks its
// main thread for more than 100 ms (a long-task observer in real Chromium),
// binary files are turned away before they reach the text box or the tool,
// sizes are the file's bytes, and the history lists 1,000 entries from
// metadata alone, reading an entry's input only when it is reopened.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { appReady, longTasks, openReadyApp, watchLongTasks, type OpenApp } from './helpers/web-app.js';

/** A unified diff of `files` new-content hunks of `lines` added lines each (100-character lines). */
function makeDiff(files: number, lines: number): string {
  const added = `+${'x'.repeat(99)}\n`.repeat(lines);
  const parts: string[] = [];
  for (let i = 0; i < files; i++) {
    const p = `src/dir${i % 10}/file${i}.txt`;
    parts.push(
      `diff --git a/${p} b/${p}\nindex 1111111..2222222 100644\n--- a/${p}\n+++ b/${p}\n@@ -1,1 +1,${lines + 1} @@\n keep\n${added}`,
    );
  }
  return parts.join('');
}

/** Size as the page must print it: the file's bytes, SI units. */
const mb = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;

const MAX_TASK_MS = 100;

let app: OpenApp;
let page: Page;

/** The summary is drawn and the page has nothing left in flight (the history redrawn after it). */
async function resultSettled(): Promise<void> {
  await page.waitForFunction(() => document.querySelector('#result')?.getAttribute('aria-busy') === 'false', null, { timeout: 120_000 });
  await appReady(page);
}

/** Two frames: what a click changed is laid out and painted. */
async function painted(): Promise<void> {
  await page.evaluate(() => new Promise<void>((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => resolve()))));
}

/**
 * Long tasks with their start times, to tell the phases apart: reading and
 * showing the input (before the page's 'corral:input-shown' mark) and the
 * summary's own work after it. (watchLongTasks keeps durations only.)
 */
async function watchPhases(): Promise<void> {
  await page.evaluate(() => {
    const g = globalThis as unknown as { __phaseTasks?: { start: number; ms: number }[]; __phaseObserver?: PerformanceObserver };
    g.__phaseTasks = [];
    performance.clearMarks('corral:input-shown');
    g.__phaseObserver ??= new PerformanceObserver((list) => {
      for (const e of list.getEntries()) g.__phaseTasks!.push({ start: e.startTime, ms: e.duration });
    });
    g.__phaseObserver.observe({ type: 'longtask' });
  });
}

async function phases(): Promise<{ reading: number[]; after: number[] }> {
  return page.evaluate(() => {
    const g = globalThis as unknown as { __phaseTasks?: { start: number; ms: number }[] };
    const shown = performance.getEntriesByName('corral:input-shown').at(-1)?.startTime ?? Infinity;
    const tasks = g.__phaseTasks ?? [];
    g.__phaseTasks = [];
    return {
      reading: tasks.filter((t) => t.start < shown).map((t) => Math.round(t.ms)),
      after: tasks.filter((t) => t.start >= shown).map((t) => Math.round(t.ms)),
    };
  });
}

async function historyCount(): Promise<number> {
  return page.locator('#history button[data-snapshot]').count();
}

describe('apps/web: input of any size and kind, without stalling the page', () => {
  beforeAll(async () => {
    app = await openReadyApp({ prioritized: true });
    page = app.page;
    await watchLongTasks(page);
  }, 180_000);

  afterAll(async () => {
    await app?.close();
  });

  // Long tasks are timed on a shared machine: a neighbour's load can stretch one past 100 ms once; a real regression fails every try.
  it('refuses a 1 MB binary file (bytes that are not UTF-8) without touching the text box or running the tool', { retry: 2 }, async () => {
    const file = join(app.scratch, 'photo.raw');
    // No NUL at all: bytes 0x80–0xff, which are never UTF-8 text on their own.
    const bytes = randomBytes(1_000_000).map((b) => b | 0x80);
    writeFileSync(file, bytes);
    await page.fill('#diff-input', 'my notes, kept');
    const before = await historyCount();
    await longTasks(page);
    await page.setInputFiles('#file-input', file);
    await page.waitForSelector('#result-error');
    const tasks = await longTasks(page);
    console.log(`1 MB binary: long tasks ${JSON.stringify(tasks.map(Math.round))}`);
    expect(await page.textContent('#result-error h3')).toBe('This is a binary file');
    expect(await page.textContent('#result-error')).toContain('photo.raw (1.0 MB)');
    expect(await page.inputValue('#diff-input')).toBe('my notes, kept');
    expect(await page.textContent('#file-note')).toBe('photo.raw (1.0 MB) was not loaded.');
    expect(await historyCount()).toBe(before);
    expect(tasks.filter((ms) => ms > MAX_TASK_MS)).toEqual([]);
  });

  // Long tasks are timed on a shared machine: a neighbour's load can stretch one past 100 ms once; a real regression fails every try.
  it('refuses a 50 MB random file as binary, with no long task and the size on disk', { retry: 2 }, async () => {
    const file = join(app.scratch, 'random.bin');
    writeFileSync(file, randomBytes(50_000_000));
    const before = await historyCount();
    await page.evaluate(() => (document.querySelector('#result-body')!.textContent = ''));
    await longTasks(page);
    await page.setInputFiles('#file-input', file);
    await page.waitForSelector('#result-error');
    const tasks = await longTasks(page);
    console.log(`50 MB binary: long tasks ${JSON.stringify(tasks.map(Math.round))}`);
    const message = await page.textContent('#result-error');
    expect(message).toContain('random.bin (50.0 MB) has binary content');
    expect(message).not.toMatch(/MiB|of JSON/);
    expect(await page.inputValue('#diff-input')).toBe('my notes, kept');
    expect(await historyCount()).toBe(before);
    expect(tasks.filter((ms) => ms > MAX_TASK_MS)).toEqual([]);
  });

  // Long tasks are timed on a shared machine: a neighbour's load can stretch one past 100 ms once; a real regression fails every try.
  it('summarizes a 2 MB diff picked as a file, reading and showing it (read-only) without a long task', { retry: 2 }, async () => {
    const diff = makeDiff(200, 100);
    const file = join(app.scratch, 'big-change.diff');
    writeFileSync(file, diff);
    await watchPhases();
    await page.setInputFiles('#file-input', file);
    await page.waitForFunction(() => /200 files/.test(document.querySelector('#summary-text')?.textContent ?? ''), null, {
      timeout: 60_000,
    });
    await resultSettled();
    const tasks = await phases();
    console.log(
      `2 MB diff picked: long tasks reading/showing ${JSON.stringify(tasks.reading)}, summarizing/drawing ${JSON.stringify(tasks.after)}`,
    );
    expect(await page.textContent('#summary-text')).toMatch(/20000|20,000/);
    expect(await page.textContent('#file-note')).toContain(`big-change.diff (${mb(Buffer.byteLength(diff))})`);
    // The box holds the start of the diff, read-only, not 2 MB of text.
    const box = await page.$eval('#diff-input', (el) => ({
      readOnly: (el as HTMLTextAreaElement).readOnly,
      length: (el as HTMLTextAreaElement).value.length,
    }));
    expect(box.readOnly).toBe(true);
    expect(box.length).toBeLessThan(20_000);
    expect((await page.inputValue('#diff-input')).startsWith('diff --git a/src/dir0/file0.txt')).toBe(true);
    expect(tasks.reading.filter((ms) => ms > MAX_TASK_MS)).toEqual([]);
  });

  // Long tasks are timed on a shared machine: a neighbour's load can stretch one past 100 ms once; a real regression fails every try.
  it('summarizes a 2 MB paste, and typing afterwards stays responsive', { retry: 2 }, async () => {
    await page.click('#clear');
    await watchPhases();
    // A real paste event with the diff on its clipboard data, as Ctrl+V delivers it.
    await page.evaluate(
      ({ files, lines }) => {
        const added = `+${'y'.repeat(99)}\n`.repeat(lines);
        let diff = '';
        for (let i = 0; i < files; i++) {
          const p = `lib/m${i}.js`;
          diff += `diff --git a/${p} b/${p}\n--- a/${p}\n+++ b/${p}\n@@ -1,1 +1,${lines + 1} @@\n keep\n${added}`;
        }
        const data = new DataTransfer();
        data.setData('text/plain', diff);
        const box = document.querySelector<HTMLTextAreaElement>('#diff-input')!;
        box.focus();
        box.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
      },
      { files: 180, lines: 110 },
    );
    await page.waitForFunction(() => /180 files/.test(document.querySelector('#summary-text')?.textContent ?? ''), null, {
      timeout: 60_000,
    });
    await resultSettled();
    expect(await page.textContent('#file-note')).toMatch(/^pasted text \(2\.0 MB\) is loaded/);
    expect(await page.$eval('#diff-input', (el) => (el as HTMLTextAreaElement).value.length)).toBeLessThan(20_000);
    const pasted = await phases();
    // Back to typing: Clear, then type a line.
    await page.click('#clear');
    await painted();
    await longTasks(page);
    await page.click('#diff-input');
    await page.keyboard.type('diff --git a/x b/x\n+typed\n');
    expect(await page.inputValue('#diff-input')).toBe('diff --git a/x b/x\n+typed\n');
    const typing = await longTasks(page);
    console.log(
      `2 MB paste: long tasks pasting/showing ${JSON.stringify(pasted.reading)}, summarizing/drawing ${JSON.stringify(pasted.after)}; typing ${JSON.stringify(typing.map(Math.round))}`,
    );
    expect(pasted.reading.filter((ms) => ms > MAX_TASK_MS)).toEqual([]);
    expect(typing.filter((ms) => ms > MAX_TASK_MS)).toEqual([]);
  });

  it('says which file it summarizes when several are dropped at once', async () => {
    await page.click('#clear');
    await page.evaluate(() => {
      const data = new DataTransfer();
      const diff = (name: string) => `diff --git a/${name} b/${name}\n--- a/${name}\n+++ b/${name}\n@@ -1 +1,2 @@\n one\n+two\n`;
      data.items.add(new File([diff('first.txt')], 'first.diff'));
      data.items.add(new File([diff('second.txt')], 'second.diff'));
      document.querySelector('#drop')!.dispatchEvent(new DragEvent('drop', { dataTransfer: data, bubbles: true, cancelable: true }));
    });
    await page.waitForFunction(() => /first\.txt/.test(document.querySelector('#result-body')?.textContent ?? ''));
    expect(await page.textContent('#toast')).toBe('2 files were dropped; one diff is summarized at a time, so only first.diff was loaded.');
    expect(await page.textContent('#result-body')).not.toContain('second.txt');
    await resultSettled();
  });

  it('lists a history of 1,000 entries from metadata alone, and reads an input only when its entry is reopened', async () => {
    const context = await app.freshContext();
    const p = context.pages()[0] ?? (await context.newPage());
    // Every read of the 'inputs' object store, counted where IndexedDB is called (idb wraps these):
    // in the runtime's worker, which holds the history's store. Installed when the worker is
    // created, seconds before the page asks it for the history (after the runtime is ready).
    const countInputReads = () => {
      const g = globalThis as unknown as { __inputReads: number };
      g.__inputReads = 0;
      for (const method of ['get', 'getAll', 'openCursor', 'openKeyCursor'] as const) {
        const original = IDBObjectStore.prototype[method] as (...args: unknown[]) => IDBRequest;
        (IDBObjectStore.prototype as unknown as Record<string, unknown>)[method] = function (this: IDBObjectStore, ...args: unknown[]) {
          if (this.name === 'inputs') g.__inputReads++;
          return original.apply(this, args);
        };
      }
    };
    const runtimeWorker = () => p.workers().find((w) => /runtime\.worker/.test(w.url()));
    p.on('worker', (worker) => {
      if (/runtime\.worker/.test(worker.url())) void worker.evaluate(countInputReads).catch(() => {});
    });
    const inputReads = async () =>
      (await runtimeWorker()!.evaluate(() => (globalThis as unknown as { __inputReads?: number }).__inputReads)) ?? -1;
    await p.goto(app.url);
    await appReady(p);
    // One real call, then 999 earlier ones like it, each with its own 50 KB diff, written through the page's store.
    const written = await p.evaluate(async () => {
      // The panels' runtime in the page writes to the same IndexedDB store as the summaries' runtime worker.
      type App = {
        panelCorral(): Promise<import('@corral/browser').BrowserCorral>;
        summarize(diff: string): Promise<{ snapshotId?: string }>;
      };
      const corralApp = (globalThis as unknown as { corralApp: App }).corralApp;
      const diff = 'diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-old\n+new\n';
      const { snapshotId } = await corralApp.summarize(diff);
      const store = (await corralApp.panelCorral()).store!;
      const real = (await store.getExecution(snapshotId!))!;
      const hex = async (text: string) =>
        [...new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)))]
          .map((b) => b.toString(16).padStart(2, '0'))
          .join('');
      const writes: Promise<void>[] = [];
      const diffs: string[] = [];
      for (let i = 1; i < 1000; i++) {
        const cloneDiff = `${diff}+clone ${i}\n${'+'.repeat(99).concat('\n').repeat(500)}`;
        diffs.push(cloneDiff);
        const input_json = JSON.stringify({ diff: cloneDiff, language: 'en' });
        const intent_ns = (BigInt(real.intent_ns) - BigInt(i) * 1_000_000_000n).toString();
        const id = crypto.randomUUID();
        const begin = store.beginExecution({
          id,
          decision_id: null,
          tool: real.tool,
          version: real.version,
          wasm_sha256: real.wasm_sha256,
          input_sha256: await hex(input_json),
          input_json,
          intent_ns,
        });
        writes.push(
          begin.then(() =>
            store.finishExecution(id, {
              result_ns: (BigInt(intent_ns) + 1_000_000n).toString(),
              exit_code: real.exit_code,
              error_code: null,
              error_message: null,
              stdout_sha256: real.stdout_sha256,
              stdout_head: real.stdout_head ?? '',
              stdout_tail: real.stdout_tail ?? '',
              stderr_head: real.stderr_head ?? '',
              stderr_tail: real.stderr_tail ?? '',
              duration_ms: real.duration_ms ?? 0,
              peak_memory_bytes: real.peak_memory_bytes,
            }),
          ),
        );
      }
      await Promise.all(writes);
      return { total: (await store.listExecutions({ withInput: false })).length, fifth: diffs[4]! };
    });
    expect(written.total).toBe(1000);
    // A new visit: the history is listed (and pruned to 1,000: nothing to remove) without reading one input.
    await p.reload();
    await appReady(p);
    const listing = await p.evaluate(() => ({
      ms: performance
        .getEntriesByType('measure')
        .filter((m) => m.name === 'corral:history-list')
        .map((m) => Math.round(m.duration)),
    }));
    const shown = await p.locator('#history button[data-snapshot]').count();
    const reads = await inputReads();
    console.log(
      `history of 1,000 entries: listing took ${JSON.stringify(listing.ms)} ms, ${shown} entries shown, ${reads} reads of inputs`,
    );
    expect(shown).toBe(20);
    expect(reads).toBe(0);
    // Reopening the sixth entry (the fifth clone) reads its input, once, and puts it in the box.
    await p.locator('#history button[data-snapshot]').nth(5).click();
    await p.waitForFunction((text) => document.querySelector<HTMLTextAreaElement>('#diff-input')?.value === text, written.fifth);
    expect(await inputReads()).toBe(1);
    expect(await p.locator('#summary-text').textContent()).toMatch(/1 file/);
  }, 240_000);
});
