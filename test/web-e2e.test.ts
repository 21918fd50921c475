// The offline diff summarizer (apps/web), end to end on its production
// build in test mode (`vite build --mode test`: the production build plus
// the page's handle for tests, which `vite build` leaves out), `vite preview` on 127.0.0.1, Debian's chromium driven
// by playwright-core with a profile on disk. The first visit must leave
// the app and its tool cached; then, with the network off, the page must
// still load, summarize a diff made by real git exactly as git counts it,
// send no request anywhere while doing so, and keep the summary in its
// history across a reload.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { preview, type PreviewServer } from 'vite';
import { diffTrees, type GitDiff, type Tree } from './helpers/gitdiff.js';
import { APP, CHROMIUM, CHROMIUM_FLAGS, REPO, RESULTS, appReady, buildApp, freePort } from './helpers/web-app.js';

const LETTER_STATUS: Record<string, string> = { A: 'added', D: 'deleted', M: 'modified', R: 'renamed', C: 'copied', T: 'modified' };

function lines(n: number, prefix: string): string {
  let s = '';
  for (let i = 1; i <= n; i++) s += `${prefix} ${i}\n`;
  return s;
}

function binary(seed: number, size = 600): Uint8Array {
  const b = new Uint8Array(size);
  let x = seed * 2654435761;
  for (let i = 0; i < size; i++) b[i] = (x = (x * 1103515245 + 12345) >>> 0) >>> 24;
  b[5] = 0;
  return b;
}

// A pull request's worth of the cases git prints differently.
const base = lines(60, 'const line');
const BEFORE: Tree = {
  'src/server.ts': base,
  'src/old-name.ts': lines(30, 'export const x'),
  'docs/guide.md': '# Guide\n\nRun it.\n',
  'legacy/remove-me.js': lines(12, 'legacy'),
  'assets/logo.png': binary(1),
  'scripts/run.sh': '#!/bin/sh\necho run\n',
  'notes/été.txt': 'bonjour\n',
};
const AFTER: Tree = {
  'src/server.ts':
    base.replace('const line 3\n', 'const line three\n').replace('const line 40\n', 'const line 40\nconst extra = 1;\nconst more = 2;\n') +
    'export {};\n',
  'src/new-name.ts': lines(30, 'export const x').replace('export const x 29\n', 'export const x twenty-nine\n'),
  'docs/guide.md': '# Guide\n\nRun it with `npm start`.\n\n## Offline\n\nIt works offline.\n',
  'assets/logo.png': binary(2),
  'scripts/run.sh': { content: '#!/bin/sh\necho run\n', executable: true },
  'notes/été.txt': 'bonsoir\n',
  'src/feature/new file.ts': lines(25, 'export const feature'),
};

interface Row {
  path: string;
  status: string;
  additions: string;
  deletions: string;
  hunks: string;
}

/** What the page must show for each file, from git's own numstat and name-status. */
function expectedRows(git: GitDiff): Row[] {
  return git.nameStatus.map((ns) => {
    const num = git.numstat.find((n) => n.path === ns.path)!;
    const contentless = (ns.letter === 'R' || ns.letter === 'C') && ns.score === 100;
    if (num.binary && !contentless) return { path: ns.path, status: 'binary', additions: '—', deletions: '—', hunks: '0' };
    return {
      path: ns.path,
      status: LETTER_STATUS[ns.letter]!,
      additions: `+${num.additions ?? 0}`,
      deletions: `−${num.deletions ?? 0}`,
      hunks: expect.stringMatching(/^\d+$/) as unknown as string,
    };
  });
}

async function tableRows(page: Page): Promise<Row[]> {
  return page.$$eval('#files-table tbody tr[data-path]', (rows) =>
    rows.map((r) => ({
      path: r.querySelector('.path')!.textContent!,
      status: (r.querySelector('[data-status]') as HTMLElement).dataset.status!,
      additions: r.querySelector('.c-add')!.textContent!,
      deletions: r.querySelector('.c-del')!.textContent!,
      hunks: r.querySelector('.c-hunks')!.textContent!,
    })),
  );
}

/** Every file of a build, as [path, text]. */
function builtFiles(dir: string): Array<[string, string]> {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name))
    .map((path) => [path.slice(dir.length + 1), readFileSync(path, 'latin1')]);
}

describe('apps/web: what the production build ships', () => {
  it('carries no test hook: vite build leaves corralApp out, the test-mode build has it', async () => {
    const scratch = mkdtempSync(join(tmpdir(), 'corral-web-build-'));
    try {
      await buildApp(join(scratch, 'production'), 'production');
      await buildApp(join(scratch, 'test'), 'test');
      const withHook = (dir: string) =>
        builtFiles(join(scratch, dir))
          .filter(([, text]) => text.includes('corralApp'))
          .map(([path]) => path);
      expect(withHook('production')).toEqual([]);
      // The same check on the build the end-to-end test drives, so it cannot pass by looking in the wrong place.
      expect(withHook('test')).toEqual([expect.stringMatching(/^assets\/index-[\w-]+\.js$/)]);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  }, 120_000);
});

const tiles = (page: Page) => page.$$eval('.tiles .tile b', (bs) => bs.map((b) => b.textContent));
const ready = appReady;

describe('apps/web: the offline diff summarizer on its production build', () => {
  let scratch: string;
  let server: PreviewServer;
  let context: BrowserContext;
  let page: Page;
  let url: string;
  /** Every request that reached the preview server. */
  const serverHits: string[] = [];
  /** Every request the browser made (page, workers, service worker). */
  const requests: string[] = [];
  const git = diffTrees(BEFORE, AFTER);

  beforeAll(async () => {
    scratch = mkdtempSync(join(tmpdir(), 'corral-web-e2e-'));
    const outDir = join(scratch, 'dist');
    const configFile = join(APP, 'vite.config.ts');
    await buildApp(outDir, 'test');
    server = await preview({
      root: APP,
      configFile,
      logLevel: 'warn',
      build: { outDir },
      preview: { host: '127.0.0.1', port: await freePort(), strictPort: true },
      plugins: [
        {
          name: 'count-requests',
          configurePreviewServer(s) {
            s.middlewares.use((req, _res, next) => {
              serverHits.push(req.url ?? '');
              next();
            });
          },
        },
      ],
    });
    url = server.resolvedUrls!.local[0]!;
    context = await chromium.launchPersistentContext(join(scratch, 'profile'), {
      executablePath: CHROMIUM,
      args: CHROMIUM_FLAGS,
      headless: true,
      viewport: { width: 1280, height: 900 },
      locale: 'en-US',
    });
    context.on('request', (r) => requests.push(r.url()));
    page = context.pages()[0] ?? (await context.newPage());
  });

  afterAll(async () => {
    await context?.close();
    await server?.close();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  it('on a first visit, summarizes a diff picked before the page is ready, transpiles nothing, and caches the app and its tool', async () => {
    // The tool's wasm is held back until the pick is made, so the page cannot be ready first
    // however fast or slow this machine is.
    let picked!: () => void;
    const pickMade = new Promise<void>((resolve) => (picked = resolve));
    const toolWasm = /\/assets\/diff-summary-[\w-]+\.wasm$/;
    let held = 0;
    await context.route(toolWasm, async (route) => {
      held++;
      await pickMade;
      await route.continue();
    });
    await page.goto(url);
    // Picked while the page prepares: queued, then summarized when it is ready.
    await page.setInputFiles('#file-input', { name: 'change.diff', mimeType: 'text/x-diff', buffer: Buffer.from(git.diff) });
    const pickedAt = await page.evaluate(() => performance.now());
    picked();
    await ready(page);
    await context.unroute(toolWasm);
    expect(held, 'requests for the tool held back').toBeGreaterThan(0);
    await page.waitForSelector('#files-table');
    await page.waitForFunction(() => document.querySelector('#result')?.getAttribute('aria-busy') === 'false');
    expect((await tableRows(page)).map((r) => r.path).sort()).toEqual(git.nameStatus.map((n) => n.path).sort());
    const marks = await page.evaluate(() =>
      Object.fromEntries(
        ['corral:ready', 'corral:summary-rendered'].map((m) => [m, performance.getEntriesByName(m)[0]?.startTime ?? null]),
      ),
    );
    // The pick came before the page was ready, so the summary came from the queue.
    expect(pickedAt).toBeLessThan(marks['corral:ready']!);
    console.log(
      `first visit (fresh profile): ready ${marks['corral:ready']?.toFixed(0)} ms, first summary drawn ${marks['corral:summary-rendered']?.toFixed(0)} ms after navigation (issue 16's target: 800 ms; timed by npm run bench, not asserted)`,
    );
    // The bundled component came transpiled: nothing was transpiled, so nothing was kept for a next visit.
    const transpiled = await page.evaluate(
      () =>
        new Promise<number>((resolve) => {
          const open = indexedDB.open('corral-components');
          open.onupgradeneeded = () => open.transaction!.abort();
          open.onerror = () => resolve(0);
          open.onsuccess = () => {
            const db = open.result;
            if (!db.objectStoreNames.contains('components')) return resolve((db.close(), 0));
            const count = db.transaction('components').objectStore('components').count();
            count.onsuccess = () => resolve((db.close(), count.result));
          };
        }),
    );
    expect(transpiled, 'components jco transpiled in the page').toBe(0);
    // The worker registers after the tool is ready, installs (caching every file), then claims the page.
    await page.waitForFunction(() => navigator.serviceWorker.controller !== null, null, { timeout: 90_000 });
    const cached = await page.evaluate(async () => {
      const keys = await caches.keys();
      const cache = await caches.open(keys.find((k) => k.startsWith('corral-web-'))!);
      return (await cache.keys()).map((r) => new URL(r.url).pathname);
    });
    expect(cached).toContain('/index.html');
    expect(cached.some((p) => /\/assets\/diff-summary-[\w-]+\.wasm$/.test(p))).toBe(true);
    expect(cached.some((p) => /\/assets\/worker-[\w-]+\.js$/.test(p))).toBe(true);
    // The review panel's chunk (the workflow engine, yaml, patch-review.yaml) and the tools it runs.
    expect(cached.some((p) => /\/assets\/review-[\w-]+\.js$/.test(p))).toBe(true);
    for (const tool of ['apply-patch', 'file-stats', 'grep'])
      expect(cached.some((p) => new RegExp(`/assets/${tool}-[\\w-]+\\.wasm$`).test(p))).toBe(true);
    expect(await page.getAttribute('#status', 'data-state')).toBe('ready');
  }, 180_000); // the service worker caches every file, jco's bindgen too (for third-party tools offline)

  it('loads with the network off and summarizes a real git diff as git counts it, sending no request', async () => {
    await context.setOffline(true);
    const hitsOnline = serverHits.length;
    await page.reload();
    await ready(page);
    expect(await page.evaluate(() => navigator.onLine)).toBe(false);
    expect(serverHits.length, 'requests that reached the server while offline').toBe(hitsOnline);

    await page.fill('#diff-input', git.diff);
    const hitsBefore = serverHits.length;
    const requestsBefore = requests.length;
    await page.click('#summarize');
    await page.waitForSelector('#files-table');
    await page.waitForFunction(() => document.querySelector('#result')?.getAttribute('aria-busy') === 'false');
    const during = requests.slice(requestsBefore).filter((u) => !u.startsWith('data:') && !u.startsWith('blob:'));
    expect(during, 'requests while summarizing').toEqual([]);
    expect(serverHits.length - hitsBefore, 'requests that reached the server while summarizing').toBe(0);

    const rows = await tableRows(page);
    expect(rows.map((r) => r.path).sort()).toEqual(git.nameStatus.map((n) => n.path).sort());
    for (const want of expectedRows(git))
      expect(
        rows.find((r) => r.path === want.path),
        want.path,
      ).toEqual(want);
    const renamed = await page.locator('tr[data-path="src/new-name.ts"] .old-path').textContent();
    expect(renamed).toContain('src/old-name.ts');

    const sum = (k: 'additions' | 'deletions') => git.numstat.reduce((s, n) => s + (n.binary ? 0 : (n[k] ?? 0)), 0);
    const [files, additions, deletions] = await tiles(page);
    expect({ files, additions, deletions }).toEqual({
      files: String(git.nameStatus.length),
      additions: `+${sum('additions')}`,
      deletions: `−${sum('deletions')}`,
    });
    expect(await page.textContent('#summary-text')).toMatch(new RegExp(`^${git.nameStatus.length} files changed: `));
    // The chart draws the largest changes.
    expect(await page.locator('.chart .chart-row').count()).toBeGreaterThan(0);
  });

  it('writes the summary in Chinese when asked', async () => {
    await page.click('.lang input[value="zh"]', { force: true });
    await page.waitForFunction(() => /个文件变更/.test(document.querySelector('#summary-text')?.textContent ?? ''));
    expect(await page.textContent('#result-heading')).toBe('摘要');
    await page.click('.lang input[value="en"]', { force: true });
    await page.waitForFunction(() => /files changed/.test(document.querySelector('#summary-text')?.textContent ?? ''));
  });

  it("shows the tool's own message for text that is not a diff", async () => {
    await page.fill('#diff-input', 'Dear reviewer,\nplease have a look at my changes.\n');
    await page.click('#summarize');
    await page.waitForSelector('#result-error');
    expect(await page.textContent('#result-error h3')).toBe('This is not a diff');
    expect(await page.textContent('#result-error .error-message')).toContain("no 'diff --git' or '---'/'+++' file headers found");
  });

  it('finds the summary in the history after a reload, and reopens it offline', async () => {
    await page.reload();
    await ready(page);
    const entry = page.locator('#history button', { hasText: `${git.nameStatus.length} files` });
    await entry.first().waitFor({ timeout: 10_000 });
    const sum = (k: 'additions' | 'deletions') => git.numstat.reduce((s, n) => s + (n.binary ? 0 : (n[k] ?? 0)), 0);
    expect(await entry.first().textContent()).toContain(`+${sum('additions')} −${sum('deletions')}`);
    // The failed call is there too, marked as such.
    expect(await page.locator('#history button', { hasText: 'not a diff' }).count()).toBe(1);

    await entry.first().click();
    await page.waitForSelector('#files-table');
    for (const want of expectedRows(git))
      expect(
        (await tableRows(page)).find((r) => r.path === want.path),
        want.path,
      ).toEqual(want);
    expect(await page.inputValue('#diff-input')).toBe(git.diff);

    mkdirSync(RESULTS, { recursive: true });
    await page.screenshot({ path: join(RESULTS, 'web-e2e.png'), fullPage: true });
  });

  it('reviews a diff with patch-review.yaml offline: steps as they run, a sign-off that survives a reload, the patch applied', async () => {
    // The checkout the diff applies to, picked as a folder (copied into OPFS by the page).
    const checkout = join(scratch, 'checkout');
    mkdirSync(join(checkout, 'src'), { recursive: true });
    writeFileSync(join(checkout, 'src/app.js'), 'export function add(a, b) {\n  return a + b;\n}\n');
    writeFileSync(join(checkout, 'README.md'), '# app\n');
    const diff = [
      'diff --git a/src/app.js b/src/app.js',
      '--- a/src/app.js',
      '+++ b/src/app.js',
      '@@ -1,3 +1,4 @@',
      ' export function add(a, b) {',
      '+  // TODO: check the types',
      '   return a + b;',
      ' }',
      '',
    ].join('\n');
    const steps = () =>
      page.$$eval('#review-steps .step', (items) =>
        Object.fromEntries(items.map((li) => [(li as HTMLElement).dataset.step, (li as HTMLElement).dataset.state])),
      );
    expect(await page.evaluate(() => navigator.onLine)).toBe(false);

    await page.fill('#diff-input', diff);
    await page.setInputFiles('#review-folder', checkout);
    expect(await page.textContent('#review-folder-note')).toMatch(/^checkout\/ · 2 files · /);
    await page.click('#review-start');
    await page.waitForSelector('#review-approve', { timeout: 60_000 });
    expect(await steps()).toEqual({
      summary: 'succeeded',
      check: 'succeeded',
      stats: 'succeeded',
      markers: 'succeeded',
      leftovers: 'skipped',
      'sign-off': 'waiting',
      apply: 'pending',
      'stats-after': 'pending',
    });
    // Every step that ended shows how long it took.
    for (const ms of await page.$$eval('#review-steps .step[data-state="succeeded"] .step-ms', (e) => e.map((x) => x.textContent)))
      expect(ms).toMatch(/^\d+(\.\d+)? (ms|s)$/);
    expect(await page.textContent('#review-prompt')).toMatch(/^Apply this patch\? 1 file changed/);
    expect(await page.textContent('#review-outcome')).toBe('Waiting for sign-off');

    // The run and its approval are in IndexedDB: after a reload it still waits, and is decided from the keyboard.
    await page.reload();
    await ready(page);
    await page.waitForSelector('#review-approve');
    expect(await page.textContent('#runs button')).toContain('Waiting for sign-off');
    await page.focus('#review-comment-sign-off');
    await page.keyboard.type('ship it');
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('review-approve');
    await page.keyboard.press('Enter');
    await page.waitForSelector('#review-run[data-outcome="applied"]', { timeout: 60_000 });
    expect(Object.values(await steps())).toEqual([
      'succeeded',
      'succeeded',
      'succeeded',
      'succeeded',
      'skipped',
      'succeeded',
      'succeeded',
      'succeeded',
    ]);
    expect(await page.textContent('#review-steps [data-step="sign-off"] .step-note')).toBe('approved by corral-web user: ship it');
    const outputs = await page.$$eval('#review-outputs dd', (dds) =>
      Object.fromEntries(dds.map((dd) => [(dd as HTMLElement).dataset.output, dd.textContent])),
    );
    expect(outputs).toMatchObject({ applies: 'true', applied: 'true', files: '1', markers: '0', lines_before: '4', lines_after: '5' });
    // The patch was applied to the page's copy, which can be downloaded.
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('[data-download="src/app.js"]')]);
    expect(download.suggestedFilename()).toBe('app.js');
    expect(readFileSync((await download.path())!, 'utf8')).toBe(
      'export function add(a, b) {\n  // TODO: check the types\n  return a + b;\n}\n',
    );

    // After another reload the finished run is listed, and opens as it ended.
    await page.reload();
    await ready(page);
    const entry = page.locator('#runs button', { hasText: 'src/app.js' });
    expect(await entry.count()).toBe(1);
    expect(await entry.textContent()).toContain('Applied');
    expect(await page.locator('#review-run').count()).toBe(0); // a finished run is not opened by itself
    await entry.click();
    await page.waitForSelector('#review-run[data-outcome="applied"]');
    expect(await page.textContent('#review-outputs [data-output="applied"]')).toBe('true');
    mkdirSync(RESULTS, { recursive: true });
    await page.screenshot({ path: join(RESULTS, 'web-e2e-review.png'), fullPage: true });
  }, 120_000);

  it('loads a third-party tool in the advanced panel and runs it on a picked folder, offline', async () => {
    const stats = join(REPO, 'wasm-tools/file-stats');
    const spec = JSON.parse(readFileSync(join(stats, 'tool-spec.json'), 'utf8')) as Record<string, unknown>;
    await page.click('#advanced summary');
    await page.waitForSelector('#adv-register');
    // A bad contract is refused with every problem listed.
    await page.setInputFiles('#adv-wasm', join(stats, 'file-stats.wasm'));
    await page.setInputFiles('#adv-spec', {
      name: 'tool-spec.json',
      mimeType: 'application/json',
      buffer: Buffer.from(JSON.stringify({ ...spec, name: 'Bad Name', version: 'one' })),
    });
    await page.click('#adv-register');
    expect(await page.textContent('#adv-load-message')).toMatch(/^E_REGISTRATION: .*2 problems: \/name: .*\/version: /);
    // A good one is registered (and, being a new component, transpiled offline on its first run).
    await page.setInputFiles('#adv-spec', {
      name: 'tool-spec.json',
      mimeType: 'application/json',
      buffer: Buffer.from(JSON.stringify({ ...spec, name: 'my-stats' })),
    });
    await page.click('#adv-register');
    expect(await page.textContent('#adv-load-message')).toBe('Loaded my-stats 1.0.0.');
    expect(await page.inputValue('#adv-tool')).toBe('my-stats@1.0.0');
    const folder = join(REPO, 'wasm-tools/diff-summary/src');
    await page.setInputFiles('#advanced input[webkitdirectory]', folder);
    await page.waitForSelector('#advanced small:text-matches("src/ · 3 files")');
    await page.click('#adv-run-button');
    // The output shown readably; the whole envelope folded away beneath it.
    await page.waitForSelector('#adv-result pre.output', { timeout: 60_000 });
    expect(await page.textContent('#adv-result pre.output')).toContain('"totals"');
    const envelope = JSON.parse((await page.textContent('#adv-envelope'))!) as {
      ok: boolean;
      tool: string;
      output: { totals: { files: number; lines: number } };
    };
    const lineCount = readdirSync(folder).reduce((n, f) => n + readFileSync(join(folder, f), 'utf8').split('\n').length - 1, 0);
    expect(envelope).toMatchObject({
      ok: true,
      tool: 'my-stats',
      output: { totals: { files: readdirSync(folder).length, lines: lineCount } },
    });
  }, 120_000);
});
