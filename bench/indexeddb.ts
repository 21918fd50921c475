/**
 * IndexedDB snapshot writes in Chromium: IndexedDbStore's durable
 * ('strict') writes against 'relaxed' ones in the same browser as the
 * baseline (acknowledged before they reach the disk, so never Corral's
 * setting), the way bench/snapshots.ts sets SQLite FULL against NORMAL.
 *
 * The page is bundled with vite, served from 127.0.0.1 (IndexedDB and
 * crypto.randomUUID need a secure origin; loopback is one), and run in
 * Debian's chromium with a fresh on-disk profile: an incognito context
 * would keep IndexedDB in memory and measure no disk at all.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { build } from 'vite';
import type { PageOptions, PageRun } from './indexeddb-page.js';
import { fmt, median, quantile } from './stats.js';

// Launch settings shared by every test and benchmark that drives Chromium (see chromium.json).
const chromiumConfig = JSON.parse(readFileSync(new URL('../../chromium.json', import.meta.url), 'utf8')) as {
  executablePath: string;
  args: string[];
};
const CHROMIUM = process.env.CORRAL_CHROMIUM ?? chromiumConfig.executablePath;
const CHROMIUM_FLAGS = chromiumConfig.args;

export async function benchIndexedDb(options: { quick?: boolean } = { quick: process.argv.includes('--quick') }): Promise<string[][]> {
  if (!existsSync(CHROMIUM)) throw new Error(`the IndexedDB benchmark needs Debian's chromium at ${CHROMIUM} (apt-get install chromium)`);
  const invocations = options.quick ? 300 : 2000;
  const LANES = 16;
  const RATE = 1000;
  const scratch = mkdtempSync(join(tmpdir(), 'corral-bench-indexeddb-'));
  const server = createServer();
  try {
    await build({
      configFile: false,
      logLevel: 'warn',
      build: {
        outDir: join(scratch, 'page'),
        emptyOutDir: true,
        minify: false,
        lib: { entry: fileURLToPath(new URL('./indexeddb-page.js', import.meta.url)), formats: ['es'], fileName: () => 'page.js' },
      },
    });
    const script = readFileSync(join(scratch, 'page', 'page.js'));
    server.on('request', (req, res) => {
      if (req.url === '/page.js') res.writeHead(200, { 'content-type': 'text/javascript' }).end(script);
      else res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><script type="module" src="/page.js"></script>');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;

    const context = await chromium.launchPersistentContext(join(scratch, 'profile'), {
      executablePath: CHROMIUM,
      args: CHROMIUM_FLAGS,
      headless: true,
    });
    const results: Record<string, PageRun> = {};
    try {
      const page = context.pages()[0] ?? (await context.newPage());
      await page.goto(`http://127.0.0.1:${port}/`);
      await page.waitForFunction(() => 'corralBench' in globalThis);
      const run = (o: PageOptions) =>
        page.evaluate(
          (o) => (globalThis as unknown as { corralBench: { run: (o: PageOptions) => Promise<PageRun> } }).corralBench.run(o),
          o,
        );
      for (const durability of ['strict', 'relaxed'] as const) {
        for (const [mode, lanes] of [
          ['single', 1],
          ['batched', LANES],
        ] as const) {
          const name = `${durability}-${mode}`;
          await run({ name, durability, lanes, perLane: Math.max(1, Math.floor(50 / lanes)) }); // warm up
          results[name] = await run({ name, durability, lanes, perLane: Math.floor(invocations / lanes) });
        }
        await run({ name: `${durability}-paced`, durability, lanes: 1, perLane: 100 }); // warm up
        results[`${durability}-paced`] = await run({ name: `${durability}-paced`, durability, lanes: 1, perLane: invocations, rate: RATE });
      }
    } finally {
      await context.close();
    }

    const rate = (n: number) =>
      `${Math.round(n).toLocaleString('en-US')} invocations/s (${Math.round(2 * n).toLocaleString('en-US')} writes/s)`;
    const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}× relaxed`;
    const rows: string[][] = [];
    for (const [mode, label] of [
      ['paced', `${RATE.toLocaleString('en-US')} invocations/s offered (open loop)`],
      ['single', 'one call at a time, flat out'],
      ['batched', `${LANES} concurrent calls, flat out, group commit`],
    ] as const) {
      const strict = results[`strict-${mode}`]!;
      const relaxed = results[`relaxed-${mode}`]!;
      rows.push([
        `snapshot write, IndexedDB strict (Chromium), ${label}`,
        fmt(median(strict.writes)),
        fmt(quantile(strict.writes, 0.99)),
        ratio(median(strict.writes), median(relaxed.writes)),
      ]);
      rows.push([
        `snapshot write, baseline IndexedDB relaxed (Chromium), ${label}`,
        fmt(median(relaxed.writes)),
        fmt(quantile(relaxed.writes, 0.99)),
        '1.00×',
      ]);
      rows.push([
        `sustained, IndexedDB strict (Chromium), ${label}`,
        rate(strict.perSecond),
        '',
        ratio(strict.perSecond, relaxed.perSecond),
      ]);
      rows.push([`sustained, baseline IndexedDB relaxed (Chromium), ${label}`, rate(relaxed.perSecond), '', '1.00×']);
    }
    return rows;
  } finally {
    server.close();
    rmSync(scratch, { recursive: true, force: true });
  }
}

// `node bench/dist/indexeddb.js` prints the table on its own.
if (import.meta.url === `file://${process.argv[1]}`) {
  const { table } = await import('./stats.js');
  console.log(table(['measurement', 'median', 'p99', 'ratio'], await benchIndexedDb()));
}
