// The web app when the user does not wait, in real Chromium (production
// build in test mode): a file picked while a summary runs, two files picked
// one after the other (the larger one read more slowly), Clear while a
// summary runs. What is shown must always be the last thing the user asked
// for: its text in the box, its name under it, and its own summary. Also a
// file picked or a diff pasted before the page's script has run (its
// download held back), and a runtime worker that cannot load.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { syntheticDiff } from '../bench/diffs.js';
import { appReady, openReadyApp, type OpenApp } from './helpers/web-app.js';

/** A small diff of `n` new files under `dir`, each adding one line. */
function smallDiff(dir: string, n: number): string {
  let diff = '';
  for (let i = 0; i < n; i++) {
    const p = `${dir}/file${i}.txt`;
    diff += `diff --git a/${p} b/${p}\nnew file mode 100644\nindex 0000000..1111111\n--- /dev/null\n+++ b/${p}\n@@ -0,0 +1 @@\n+line ${i}\n`;
  }
  return diff;
}

describe('web app: the last thing asked for is what is shown', () => {
  let app: OpenApp;
  let page: Page;
  /** Large enough that reading and summarizing it takes a while (several MB, kept in the runtime's worker). */
  let bigFile: string;

  const summaryText = () => page.textContent('#summary-text');
  const busy = () => page.waitForFunction(() => document.querySelector('#result')?.getAttribute('aria-busy') === 'true');
  /** A summary drawn and none running. */
  const drawn = () =>
    page.waitForFunction(
      () => document.querySelector('#result')?.getAttribute('aria-busy') === 'false' && document.querySelector('#summary-text') !== null,
      null,
      { timeout: 90_000 },
    );

  beforeAll(async () => {
    app = await openReadyApp();
    page = app.page;
    bigFile = join(app.scratch, 'big.diff');
    writeFileSync(bigFile, syntheticDiff(12 * 1024 * 1024));
  }, 120_000);

  afterAll(async () => {
    await app?.close();
  });

  /** Picks the big file, then (once `between` resolves) a small one of `n` files: the small one is what must be shown. */
  async function pickBigThenSmall(name: string, n: number, between: () => Promise<unknown>): Promise<void> {
    const small = join(app.scratch, `${name}.diff`);
    writeFileSync(small, smallDiff(name, n));
    await page.click('#clear');
    await page.setInputFiles('#file-input', bigFile);
    await between();
    await page.setInputFiles('#file-input', small);
    await drawn();
    await appReady(page);
    expect(await summaryText()).toMatch(new RegExp(`^${n} files changed`));
    expect(await page.inputValue('#diff-input')).toBe(smallDiff(name, n));
    expect(await page.textContent('#file-note')).toContain(`${name}.diff`);
  }

  it('summarizes a file picked while a large summary runs, not the one before it', async () => {
    await pickBigThenSmall('later', 3, busy);
  }, 120_000);

  it('shows the file picked last even when the one picked before it takes longer to read', async () => {
    await pickBigThenSmall('quick', 2, async () => {});
  }, 120_000);

  it('keeps a diff pasted while a large file is still being read', async () => {
    const huge = join(app.scratch, 'huge.diff');
    writeFileSync(huge, syntheticDiff(48 * 1024 * 1024));
    await app.context.grantPermissions(['clipboard-read', 'clipboard-write']);
    await page.click('#clear');
    await page.evaluate((text) => navigator.clipboard.writeText(text), smallDiff('pasted', 6));
    await page.focus('#diff-input');
    await page.setInputFiles('#file-input', huge);
    await page.keyboard.press('Control+V');
    await drawn();
    await appReady(page);
    expect(await summaryText()).toMatch(/^6 files changed/);
    expect(await page.inputValue('#diff-input')).toBe(smallDiff('pasted', 6));
    expect(await page.textContent('#file-note')).not.toContain('huge.diff');
  }, 120_000);

  it('keeps a large loaded diff when what is pasted over it has no text (an image)', async () => {
    await page.click('#clear');
    await page.setInputFiles('#file-input', bigFile);
    await drawn();
    await appReady(page);
    const before = await summaryText();
    await page.evaluate(() => {
      const data = new DataTransfer();
      data.items.add(new File([new Uint8Array([0x89, 0x50, 0x4e, 0x47])], 'shot.png', { type: 'image/png' }));
      const box = document.querySelector<HTMLTextAreaElement>('#diff-input')!;
      box.focus();
      box.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
    });
    await appReady(page);
    expect((await page.inputValue('#diff-input')).startsWith('diff --git a/src/module0/file0.ts')).toBe(true);
    expect(await page.textContent('#file-note')).toContain('big.diff');
    expect(await summaryText()).toBe(before);
  }, 120_000);

  it('Clear while a summary runs leaves the page cleared', async () => {
    await page.click('#clear');
    await page.setInputFiles('#file-input', bigFile);
    await busy();
    await page.click('#clear');
    await page.waitForFunction(() => document.querySelector('#result')?.getAttribute('aria-busy') === 'false', null, { timeout: 90_000 });
    await appReady(page);
    expect(await page.locator('#summary-text').count()).toBe(0);
    expect(await page.inputValue('#diff-input')).toBe('');
    expect(await page.textContent('#file-note')).toBe('');
  }, 120_000);

  /** A new profile whose page's script is held back until `release()`: the page is drawn, its code not yet run. */
  async function scriptHeld(): Promise<{ held: Page; release: () => void; close: () => Promise<void> }> {
    const context = await app.freshContext();
    await context.grantPermissions(['clipboard-read', 'clipboard-write']);
    const held = context.pages()[0] ?? (await context.newPage());
    let release!: () => void;
    const go = new Promise<void>((resolve) => (release = resolve));
    await held.route('**/assets/index-*.js', async (route) => {
      await go;
      await route.continue();
    });
    await held.goto(app.url, { waitUntil: 'domcontentloaded' });
    return { held, release, close: () => context.close() };
  }

  it("summarizes a file picked before the page's script has run", async () => {
    const { held, release, close } = await scriptHeld();
    const file = join(app.scratch, 'early.diff');
    writeFileSync(file, smallDiff('early', 4));
    await held.setInputFiles('#file-input', file);
    release();
    await held.waitForSelector('#summary-text', { timeout: 90_000 });
    expect(await held.textContent('#summary-text')).toMatch(/^4 files changed/);
    expect(await held.textContent('#file-note')).toContain('early.diff');
    await close();
  }, 120_000);

  it("summarizes a diff pasted before the page's script has run", async () => {
    const { held, release, close } = await scriptHeld();
    await held.evaluate((text) => navigator.clipboard.writeText(text), smallDiff('pasted', 5));
    await held.click('#diff-input');
    await held.keyboard.press('Control+V');
    expect(await held.inputValue('#diff-input')).toBe(smallDiff('pasted', 5));
    release();
    await held.waitForSelector('#summary-text', { timeout: 90_000 });
    expect(await held.textContent('#summary-text')).toMatch(/^5 files changed/);
    await close();
  }, 120_000);

  it('says so everywhere, without waiting forever, when the runtime worker cannot load', async () => {
    const context = await app.freshContext();
    const blocked = context.pages()[0] ?? (await context.newPage());
    await blocked.route('**/runtime.worker-*', (route) => route.abort());
    await blocked.goto(app.url);
    await blocked.waitForSelector('#status[data-state="error"]');
    expect(await blocked.textContent('#status-text')).toBe('The sandbox could not start');
    expect(await blocked.isVisible('#prep')).toBe(true);
    // A file picked now is answered (not read), not left pending.
    const file = join(app.scratch, 'blocked.diff');
    writeFileSync(file, smallDiff('blocked', 1));
    await blocked.setInputFiles('#file-input', file);
    await blocked.waitForSelector('#result-error');
    expect(await blocked.textContent('#result-error h3')).toBe('The file could not be read');
    // No card still promises the sandbox is being prepared.
    expect(await blocked.locator('#review-body').textContent()).not.toContain('Preparing the sandbox');
    expect(await blocked.locator('#review-body').textContent()).toContain('The sandbox could not start');
    await context.close();
  }, 120_000);
});
