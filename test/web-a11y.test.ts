// Accessibility and the details of the web app (apps/web), in real Chromium
// on the test-mode production build: axe-core finds no violation in English
// or 中文, light or dark, before and after a summary and with the advanced
// panel open; every control shows where the keyboard focus is; switching
// language rewrites the shown summary without running the tool again; and
// screenshots at desktop and phone sizes land in test-results/web/ for a
// person to look at.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { runTool } from './helpers/corral.js';
import { diffTrees, type GitDiff } from './helpers/gitdiff.js';
import { REPO, RESULTS, appReady, openApp, type OpenApp } from './helpers/web-app.js';

const AXE = join(REPO, 'node_modules/axe-core/axe.min.js');
const SHOTS = join(RESULTS, 'web');

function lines(n: number, prefix: string): string {
  let s = '';
  for (let i = 1; i <= n; i++) s += `${prefix} ${i}\n`;
  return s;
}

// A pull request with long nested paths (what a phone must wrap at the slashes),
// every kind of change, zero counts, and a count over a thousand (grouped digits).
const DEEP = 'packages/runtime-core/src/internal/scheduler/strategies';
const BEFORE = {
  [`${DEEP}/cooperative-time-slicing-scheduler.ts`]: lines(40, 'export const slice'),
  [`${DEEP}/legacy-priority-queue-implementation.ts`]: lines(20, 'legacy'),
  'apps/dashboard/components/navigation/SidebarNavigationItem.tsx': lines(30, 'const item'),
  'docs/guide/getting-started.md': '# Start\n',
  'README.md': '# Project\n',
  'scripts/build.sh': '#!/bin/sh\necho build\n',
  'src/a.ts': lines(5, 'a'),
  'src/b.ts': lines(5, 'b'),
  'src/c.ts': lines(5, 'c'),
};
const AFTER = {
  [`${DEEP}/cooperative-time-slicing-scheduler.ts`]:
    lines(40, 'export const slice').replace('slice 7\n', 'slice seven\n') + lines(1100, 'more'),
  'apps/dashboard/components/navigation/SidebarNavigationEntry.tsx': lines(30, 'const item'),
  'docs/guide/getting-started.md': '# Start\n\nRun `npm start`.\n',
  'README.md': '# Project\n',
  'scripts/build.sh': { content: '#!/bin/sh\necho build\n', executable: true },
  'src/a.ts': lines(5, 'a').replace('a 2\n', 'a two\n'),
  'src/b.ts': lines(5, 'b').replace('b 3\n', ''),
  'src/c.ts': `${lines(5, 'c')}c 6\n`,
  'packages/runtime-core/src/internal/scheduler/strategies/new-work-stealing-scheduler-with-affinity.ts': lines(12, 'steal'),
};

interface Violation {
  id: string;
  impact: string | null;
  nodes: string[];
}

/** axe-core's violations on the page as it is now (each with a few of the offending elements). */
async function axe(page: Page): Promise<Violation[]> {
  if (!(await page.evaluate(() => 'axe' in globalThis))) await page.addScriptTag({ path: AXE });
  return page.evaluate(async () => {
    interface AxeViolation {
      id: string;
      impact: string | null;
      nodes: Array<{ target: string[]; failureSummary: string }>;
    }
    const a = (globalThis as unknown as { axe: { run(ctx: Document, o: object): Promise<{ violations: AxeViolation[] }> } }).axe;
    const r = await a.run(document, { resultTypes: ['violations'] });
    return r.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      nodes: v.nodes.slice(0, 4).map((n) => `${n.target.join(' ')}: ${n.failureSummary.split('\n').slice(1, 2).join('')}`),
    }));
  });
}

async function setLanguage(page: Page, lang: 'en' | 'zh'): Promise<void> {
  await page.click(`.lang input[value="${lang}"]`, { force: true });
  await page.waitForFunction((l) => document.documentElement.lang.startsWith(l), lang);
}

async function summarize(page: Page, diff: string): Promise<void> {
  await page.fill('#diff-input', diff);
  await page.click('#summarize');
  await page.waitForSelector('#files-table');
  await page.waitForFunction(() => document.querySelector('#result')?.getAttribute('aria-busy') === 'false');
}

const idle = (page: Page) => page.evaluate(() => (globalThis as unknown as { corralApp: { idle(): Promise<void> } }).corralApp.idle());

/** diff-summary calls recorded in the page's store (each is a history entry's snapshot). */
const recordedCalls = (page: Page) =>
  page.evaluate(async () => {
    const app = (globalThis as unknown as { corralApp: { store: { listExecutions(q: object): Promise<unknown[]> } } }).corralApp;
    return (await app.store.listExecutions({ tool: 'diff-summary', limit: 1000 })).length;
  });

describe('web app: accessibility, focus, language switch, screenshots (Chromium)', () => {
  let app: OpenApp;
  let page: Page;
  let git: GitDiff;

  beforeAll(async () => {
    git = diffTrees(BEFORE, AFTER);
    mkdirSync(SHOTS, { recursive: true });
    app = await openApp();
    page = app.page;
  }, 120_000);

  afterAll(async () => {
    await app?.close();
  });

  it('has no axe-core violations in English and 中文, light and dark, before and after a summary, and in the advanced panel', async () => {
    const found: Record<string, Violation[]> = {};
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      for (const lang of ['en', 'zh'] as const) {
        await page.goto(app.url);
        await appReady(page);
        await setLanguage(page, lang);
        const where = `${lang} ${scheme}`;
        found[`${where}, before a summary`] = await axe(page);
        await summarize(page, git.diff);
        found[`${where}, after a summary`] = await axe(page);
        // The advanced panel, open, after running the bundled tool in it (the result view drawn).
        await page.click('#advanced summary');
        await page.waitForSelector('#adv-run-button');
        await page.click('#adv-run-button');
        await page.waitForSelector('#adv-result', { timeout: 60_000 });
        found[`${where}, advanced panel open`] = await axe(page);
      }
    }
    expect(Object.keys(found)).toHaveLength(12);
    const failing = Object.fromEntries(Object.entries(found).filter(([, v]) => v.length > 0));
    expect(failing).toEqual({});
  }, 300_000);

  it('moves nothing while a first visit prepares (no layout shift), and hides "Clear history" while there is no history', async () => {
    const context = await app.freshContext();
    const fresh = context.pages()[0] ?? (await context.newPage());
    await fresh.addInitScript(() => {
      const g = globalThis as unknown as { __shifts: string[]; __prepShown: boolean };
      g.__shifts = [];
      g.__prepShown = false;
      new PerformanceObserver((list) => {
        for (const e of list.getEntries() as Array<
          PerformanceEntry & { value: number; hadRecentInput: boolean; sources: Array<{ node?: Node }> }
        >)
          if (!e.hadRecentInput)
            g.__shifts.push(
              `${e.value.toFixed(4)} ${e.sources.map((x) => (x.node instanceof Element ? `${x.node.tagName}#${x.node.id}.${x.node.className}` : String(x.node?.nodeName))).join(',')}`,
            );
      }).observe({ type: 'layout-shift', buffered: true });
      // Whether the progress bar showed at all (it does only when preparing takes a while).
      new MutationObserver(() => {
        if (document.getElementById('prep')?.hidden === false) g.__prepShown = true;
      }).observe(document, { subtree: true, attributes: true, attributeFilter: ['hidden'] });
    });
    await fresh.goto(app.url);
    await appReady(fresh);
    const { shifts, prepShown } = await fresh.evaluate(() => {
      const g = globalThis as unknown as { __shifts: string[]; __prepShown: boolean };
      return { shifts: g.__shifts, prepShown: g.__prepShown };
    });
    console.log(`first visit: progress bar shown: ${prepShown}; layout shifts: ${JSON.stringify(shifts)}`);
    expect(shifts.reduce((a, b) => a + Number.parseFloat(b), 0)).toBeLessThan(0.01);
    expect(await fresh.locator('#history li').count()).toBe(0);
    expect(await fresh.isVisible('#clear-history')).toBe(false);
    await summarize(fresh, git.diff);
    await idle(fresh);
    expect(await fresh.isVisible('#clear-history')).toBe(true);
    await context.close();
  }, 120_000);

  it('shows where the keyboard focus is on every control, the file picker included', async () => {
    await page.emulateMedia({ colorScheme: 'light' });
    await page.goto(app.url);
    await appReady(page);
    await setLanguage(page, 'en');
    await summarize(page, git.diff);
    await page.click('#advanced summary');
    await page.waitForSelector('#adv-run-button');

    // The file picker, reached with Tab from the button before it.
    await page.focus('#example');
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('file-input');
    const ring = await page.$eval('#file-input', (input) => {
      const style = getComputedStyle(input.closest('label')!);
      return { style: style.outlineStyle, width: Number.parseFloat(style.outlineWidth) };
    });
    expect(ring.style).not.toBe('none');
    expect(ring.width).toBeGreaterThanOrEqual(2);

    // Then every stop of a whole Tab round: the focused element, the label it
    // sits in, or the sibling that draws it (the language switch) has a ring.
    await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
    const unseen: string[] = [];
    let stops = 0;
    for (let i = 0; i < 150; i++) {
      await page.keyboard.press('Tab');
      const stop = await page.evaluate(() => {
        const el = document.activeElement as HTMLElement | null;
        if (!el || el === document.body) return null;
        const ringed = [el, el.closest('label'), el.nextElementSibling].some((c) => {
          if (!c) return false;
          const s = getComputedStyle(c);
          return s.outlineStyle !== 'none' && Number.parseFloat(s.outlineWidth) >= 2;
        });
        const name = `${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ''} "${(el.textContent || el.getAttribute('aria-label') || '').trim().slice(0, 30)}"`;
        return { ringed, name, first: el.classList.contains('skip') };
      });
      if (stop === null) continue;
      if (stop.first && stops > 0) break;
      stops++;
      if (!stop.ringed) unseen.push(stop.name);
    }
    expect(stops).toBeGreaterThan(20);
    expect(unseen).toEqual([]);
  }, 120_000);

  it('switches language without running the tool again: the sentence is rewritten, no history entry is added', async () => {
    await page.goto(app.url);
    await appReady(page);
    await setLanguage(page, 'en');
    await summarize(page, git.diff);
    await idle(page);
    const calls = await recordedCalls(page);
    const entries = await page.locator('#history li').count();
    const english = (await page.textContent('#summary-text'))!;

    await setLanguage(page, 'zh');
    await page.waitForFunction(() => /个文件变更/.test(document.querySelector('#summary-text')?.textContent ?? ''));
    const chinese = (await page.textContent('#summary-text'))!;
    await idle(page);
    expect(await recordedCalls(page)).toBe(calls);
    expect(await page.locator('#history li').count()).toBe(entries);

    // The same words the tool writes in each language, with numbers grouped as on the tiles.
    const plain = (s: string) => s.replace(/(\d),(?=\d{3})/g, '$1');
    for (const [language, shown] of [
      ['en', english],
      ['zh', chinese],
    ] as const) {
      const tool = await runTool('diff-summary', { diff: git.diff, language });
      expect(plain(shown)).toBe((tool.output as { summary: string }).summary);
    }
    const added = git.numstat.reduce((n, f) => n + (f.additions ?? 0), 0);
    expect(added).toBeGreaterThan(1000);
    const grouped = added.toLocaleString('en');
    expect(english).toContain(`+${grouped}`);
    expect(chinese).toContain(`+${grouped}`);
    expect(await page.locator('.tile.add b').textContent()).toBe(`+${grouped}`);
    // Every string on the page is in Chinese now, the totals' label and the skip link included.
    expect(await page.getAttribute('.tiles', 'aria-label')).toBe('合计');
    expect(await page.textContent('.skip')).toBe('跳到 diff 输入框');
    await setLanguage(page, 'en');
  }, 120_000);

  it('sorts numbers both ways, counts in the singular, and says when only one of several dropped files is used', async () => {
    await page.goto(app.url);
    await appReady(page);
    await setLanguage(page, 'en');
    await summarize(page, git.diff);
    const added = async () =>
      page.$$eval('#files-table tbody tr .c-add', (cells) => cells.map((c) => Number(c.textContent!.replace(/[^\d]/g, ''))));
    // The list view: the folder view sorts within each folder.
    await page.click('button[data-mode="list"]');
    const inDiffOrder = await added();
    const header = page.locator('#files-table th[data-key="additions"]');
    await header.locator('button').click();
    expect(await header.getAttribute('aria-sort')).toBe('descending');
    expect(await added()).toEqual([...inDiffOrder].sort((a, b) => b - a));
    await header.locator('button').click();
    expect(await header.getAttribute('aria-sort')).toBe('ascending');
    expect(await added()).toEqual([...inDiffOrder].sort((a, b) => a - b));
    await header.locator('button').click();
    expect(await header.getAttribute('aria-sort')).toBeNull();
    expect(await added()).toEqual(inDiffOrder);

    // One file, one hunk: "1 file", "1 hunk".
    await summarize(page, '--- a.txt\n+++ a.txt\n@@ -1 +1 @@\n-a\n+b\n');
    expect(await page.$$eval('.tiles .tile span', (s) => s.map((x) => x.textContent))).toEqual([
      'file',
      'addition',
      'deletion',
      'hunk',
      'time taken',
    ]);

    // Two files dropped at once: the first is summarized, and the page says so.
    await page.evaluate(() => {
      const data = new DataTransfer();
      data.items.add(new File(['--- x\n+++ x\n@@ -1 +1 @@\n-1\n+2\n'], 'first.diff'));
      data.items.add(new File(['not this one'], 'second.diff'));
      document.getElementById('drop')!.dispatchEvent(new DragEvent('drop', { dataTransfer: data, bubbles: true, cancelable: true }));
    });
    await page.waitForFunction(() => !document.getElementById('toast')!.hidden);
    expect(await page.textContent('#toast')).toBe('2 files were dropped; one diff is summarized at a time, so only first.diff was loaded.');
    await page.waitForSelector('#files-table tr[data-path="x"]');
  }, 120_000);

  it('takes screenshots at 1280×800 and 390×844 (English light, 中文 dark)', async () => {
    for (const [scheme, lang] of [
      ['light', 'en'],
      ['dark', 'zh'],
    ] as const) {
      for (const viewport of [
        { width: 1280, height: 800 },
        { width: 390, height: 844 },
      ]) {
        await page.setViewportSize(viewport);
        await page.emulateMedia({ colorScheme: scheme });
        await page.goto(app.url);
        await appReady(page);
        await setLanguage(page, lang);
        const name = `${lang}-${scheme}-${viewport.width}x${viewport.height}`;
        await page.fill('#diff-input', '');
        await page.screenshot({ path: join(SHOTS, `${name}-empty.png`) });
        await summarize(page, git.diff);
        // The result is brought into view on its own (on a phone it is below the input).
        await page.waitForFunction(() => {
          const top = document.querySelector('#result')!.getBoundingClientRect().top;
          return top >= -1 && top < innerHeight * 0.75;
        });
        // Nothing is wider than the screen.
        expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(viewport.width);
        // The phone layout (files as cards) keeps the page accessible too.
        expect(await axe(page), name).toEqual([]);
        await page.waitForTimeout(400); // the smooth scroll settles before the picture
        await page.screenshot({ path: join(SHOTS, `${name}.png`) });
        await page.screenshot({ path: join(SHOTS, `${name}-full.png`), fullPage: true });
        // The advanced panel, after running the bundled tool in it.
        await page.click('#advanced summary');
        await page.click('#adv-run-button');
        await page.waitForSelector('#adv-result');
        await page.locator('#advanced').screenshot({ path: join(SHOTS, `${name}-advanced.png`) });
      }
    }
    await page.setViewportSize({ width: 1280, height: 900 });
  }, 180_000);
});
