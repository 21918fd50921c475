// Shared by the Chromium end-to-end tests of apps/web: build the app (in
// test mode: the production build plus the page's handle for tests), serve
// it with `vite preview` on 127.0.0.1, and open it in Debian's chromium
// (playwright-core) with a profile on disk.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { build, preview, type PreviewServer, type Plugin } from 'vite';

export const REPO = fileURLToPath(new URL('../../', import.meta.url));
export const APP = join(REPO, 'apps/web');
export const RESULTS = join(REPO, 'test-results');

// Launch settings shared by every test and benchmark that drives Chromium (see chromium.json).
const chromiumConfig = JSON.parse(readFileSync(join(REPO, 'chromium.json'), 'utf8')) as { executablePath: string; args: string[] };
export const CHROMIUM = process.env.CORRAL_CHROMIUM ?? chromiumConfig.executablePath;
export const CHROMIUM_FLAGS = chromiumConfig.args;

export async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/**
 * Build the app for production into `outDir`; `mode: 'test'` adds the page's
 * handle for tests (globalThis.corralApp). vitest sets NODE_ENV=test, and
 * vite builds for production only under NODE_ENV=production.
 */
export async function buildApp(outDir: string, mode: 'production' | 'test'): Promise<void> {
  const nodeEnv = process.env.NODE_ENV;
  process.env.NODE_ENV = 'production';
  try {
    await build({
      root: APP,
      configFile: join(APP, 'vite.config.ts'),
      mode,
      logLevel: 'error',
      build: { outDir, emptyOutDir: true, sourcemap: false },
    });
  } finally {
    process.env.NODE_ENV = nodeEnv;
  }
}

export interface OpenApp {
  url: string;
  context: BrowserContext;
  page: Page;
  /** A folder of the test's own, removed by close(). */
  scratch: string;
  /** Opens another fresh profile on the same build (a new user). */
  freshContext(options?: { viewport?: { width: number; height: number }; colorScheme?: 'light' | 'dark' }): Promise<BrowserContext>;
  close(): Promise<void>;
}

/**
 * Chromium started through `nice -n -10` (GNU nice runs it anyway, at the
 * usual priority, where it may not raise one): tests that time the page's
 * long tasks measure the page's own work, not the other test files that
 * share this machine's cores. A script in `dir`.
 */
function prioritizedChromium(dir: string): string {
  const script = join(dir, 'chromium-first');
  writeFileSync(script, `#!/bin/sh\nexec nice -n -10 ${JSON.stringify(CHROMIUM)} "$@"\n`, { mode: 0o755 });
  return script;
}

/** Build the test-mode app, serve it, and open it in a fresh Chromium profile (nothing loaded yet). */
export async function openApp(
  options: {
    viewport?: { width: number; height: number };
    plugins?: Plugin[];
    locale?: string;
    /** Run Chromium ahead of other processes (see prioritizedChromium): for tests that time long tasks. */
    prioritized?: boolean;
  } = {},
): Promise<OpenApp> {
  const scratch = mkdtempSync(join(tmpdir(), 'corral-web-e2e-'));
  const executablePath = options.prioritized ? prioritizedChromium(scratch) : CHROMIUM;
  const outDir = join(scratch, 'dist');
  await buildApp(outDir, 'test');
  const server: PreviewServer = await preview({
    root: APP,
    configFile: join(APP, 'vite.config.ts'),
    logLevel: 'warn',
    build: { outDir },
    preview: { host: '127.0.0.1', port: await freePort(), strictPort: true },
    plugins: options.plugins ?? [],
  });
  const url = server.resolvedUrls!.local[0]!;
  const contexts: BrowserContext[] = [];
  let profiles = 0;
  const freshContext: OpenApp['freshContext'] = async (o = {}) => {
    const context = await chromium.launchPersistentContext(join(scratch, `profile-${profiles++}`), {
      executablePath,
      args: CHROMIUM_FLAGS,
      headless: true,
      viewport: o.viewport ?? options.viewport ?? { width: 1280, height: 900 },
      locale: options.locale ?? 'en-US',
      ...(o.colorScheme ? { colorScheme: o.colorScheme } : {}),
    });
    contexts.push(context);
    return context;
  };
  const context = await freshContext();
  const page = context.pages()[0] ?? (await context.newPage());
  return {
    url,
    context,
    page,
    scratch,
    freshContext,
    async close() {
      for (const c of contexts) await c.close().catch(() => {});
      await server.close();
      rmSync(scratch, { recursive: true, force: true });
    },
  };
}

/** The app is ready to summarize and has nothing left in flight (history drawn, service worker registered). */
export const appReady = (page: Page) =>
  page.waitForFunction(
    () => (globalThis as unknown as { corralApp?: { idle(): Promise<void> } }).corralApp?.idle().then(() => true),
    null,
    { timeout: 90_000 },
  );

/** openApp, then the app loaded in its page and ready (appReady). */
export async function openReadyApp(options: Parameters<typeof openApp>[0] = {}): Promise<OpenApp> {
  const app = await openApp(options);
  await app.page.goto(app.url);
  await appReady(app.page);
  return app;
}

/**
 * Starts recording the page's long tasks (over 50 ms, as Chromium reports
 * them); `longTasks(page)` returns the durations since. Call after every
 * navigation (the observer lives in the page).
 */
export async function watchLongTasks(page: Page): Promise<void> {
  await page.evaluate(() => {
    const g = globalThis as unknown as { __longTasks?: number[] };
    g.__longTasks = [];
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) g.__longTasks!.push(e.duration);
    }).observe({ type: 'longtask', buffered: false });
  });
}

export async function longTasks(page: Page): Promise<number[]> {
  return page.evaluate(() => {
    const g = globalThis as unknown as { __longTasks?: number[] };
    const tasks = g.__longTasks ?? [];
    g.__longTasks = [];
    return tasks;
  });
}
