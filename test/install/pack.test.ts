/**
 * The packages as a user gets them. Every published workspace package is
 * packed (`npm pack`), the tarballs are installed into an empty folder
 * outside the repository (`npm install ./*.tgz`, from npm's cache where it
 * can), and used there the way the README says: `corral tools`, `corral run`,
 * `corral mcp` over stdio, a program compiled with `tsc --strict` and run,
 * and a Vite page bundling @corral/browser with the tools' .wasm, in build
 * and in dev (where Vite pre-bundles the installed package).
 *
 * Nothing in that folder may reach the repository: the child processes get
 * no npm_* variables from `npm test`, no NODE_PATH, and no PATH entry inside
 * the repository (whose node_modules/.bin has a `corral` of its own). The
 * tools it uses from the repository, by path, are the compilers: tsc is
 * installed into the folder from npm's cache, Vite is run from the
 * repository's node_modules.
 *
 * better-sqlite3 has no prebuilt binary for an offline machine, and building
 * it from source costs about two minutes of one core. So the install is
 * offered the binary the repository's own install built (same version, same
 * Node, this machine) as a local prebuild, which is what prebuild-install
 * would have downloaded; CORRAL_PACK_FROM_SOURCE=1 skips that and compiles.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
// Every bundled tool: the folders of wasm-tools/ with a tool-spec.json, in name order.
const BUNDLED = readdirSync(join(ROOT, 'wasm-tools'), { withFileTypes: true })
  .filter((e) => e.isDirectory() && existsSync(join(ROOT, 'wasm-tools', e.name, 'tool-spec.json')))
  .map((e) => e.name)
  .sort();
const rootRequire = createRequire(join(ROOT, 'package.json'));
const rootManifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Manifest;

interface Manifest {
  name: string;
  version: string;
  private?: boolean;
  main?: string;
  types?: string;
  files?: string[];
  bin?: Record<string, string>;
  exports?: Record<string, unknown>;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  workspaces?: string[];
}

/** The workspace packages that are published: all but the private ones (apps/web). */
const PUBLISHED = (rootManifest.workspaces ?? [])
  .map((dir) => ({ dir, manifest: JSON.parse(readFileSync(join(ROOT, dir, 'package.json'), 'utf8')) as Manifest }))
  .filter((w) => !w.manifest.private);

interface Packed {
  name: string;
  filename: string;
  files: { path: string }[];
}

let work: string; // the temporary folder: tarballs/, app/
let app: string; // the user's project
let packed: Packed[] = [];
const timings: Record<string, number> = {};
let sqliteFrom = '';

/** The environment of everything run in the user's project: nothing that points into the repository. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const keep = /^npm_config_(cache|registry|userconfig|globalconfig|proxy|https_proxy|noproxy|strict_ssl|cafile|ca)$/i;
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^npm_/i.test(key) && !keep.test(key)) continue;
    if (['INIT_CWD', 'NODE_PATH', 'NODE_OPTIONS'].includes(key)) continue;
    env[key] = value;
  }
  const inRepo = (p: string) => p === ROOT.slice(0, -1) || p.startsWith(ROOT);
  env.PATH = (process.env.PATH ?? '')
    .split(delimiter)
    .filter((p) => p && !inRepo(p))
    .join(delimiter);
  env.CORRAL_STORE = join(work, 'state', 'snapshots.db');
  env.CORRAL_CACHE_DIR = join(work, 'state', 'cache');
  return { ...env, ...extra };
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Run a command to its end; stdin gets `input` (then EOF). Fails the test only through the caller's expects. */
function run(
  command: string,
  args: string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv; input?: string; timeoutMs?: number },
): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? cleanEnv(), stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (s: string) => (stdout += s));
    child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 120_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(options.input ?? '');
  });
}

const npx = (args: string[], options: { input?: string; timeoutMs?: number } = {}) =>
  run('npx', ['--no', ...args], { cwd: app, ...options });
const explain = (r: Run) => `exit ${r.code}\n--- stdout\n${r.stdout.slice(-4000)}\n--- stderr\n${r.stderr.slice(-4000)}`;

async function timed<T>(label: string, f: () => Promise<T>): Promise<T> {
  const start = performance.now();
  try {
    return await f();
  } finally {
    timings[label] = Math.round(performance.now() - start);
  }
}

/** A RegExp for one path segment of a `files` entry, where `*` is any name. */
function globSegment(glob: string): RegExp {
  return new RegExp(`^${glob.replace(/[.+?^$()|[\]\\{}]/g, '\\$&').replace(/\*/g, '[^/]*')}$`);
}

/**
 * The repository's own better-sqlite3 build as a prebuild-install tarball,
 * when it is the version @corral/node pins; undefined means compile.
 */
function localPrebuilds(into: string): string | undefined {
  if (process.env.CORRAL_PACK_FROM_SOURCE) return undefined;
  const nodeManifest = PUBLISHED.find((w) => w.manifest.name === '@corral/node')?.manifest;
  const pkgDir = dirname(rootRequire.resolve('better-sqlite3/package.json'));
  const { version } = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8')) as { version: string };
  if (version !== nodeManifest?.dependencies?.['better-sqlite3']) return undefined;
  if (!existsSync(join(pkgDir, 'build/Release/better_sqlite3.node'))) return undefined;
  mkdirSync(into, { recursive: true });
  const name = `better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
  try {
    execFileSync('tar', ['-czf', join(into, name), '-C', pkgDir, 'build/Release/better_sqlite3.node']);
  } catch {
    return undefined;
  }
  return into;
}

beforeAll(async () => {
  work = realpathSync(mkdtempSync(join(tmpdir(), 'corral-pack-')));
  if (work.startsWith(ROOT)) throw new Error(`the temporary folder ${work} is inside the repository; set TMPDIR elsewhere`);
  const tarballs = join(work, 'tarballs');
  mkdirSync(tarballs);
  app = join(work, 'app');
  mkdirSync(app);

  const pack = await timed('pack', () =>
    run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', tarballs, ...PUBLISHED.flatMap((w) => ['-w', w.dir])], {
      cwd: ROOT,
      env: process.env,
    }),
  );
  if (pack.code !== 0) throw new Error(`npm pack failed: ${explain(pack)}`);
  packed = JSON.parse(pack.stdout) as Packed[];

  // The user's project: empty but for its manifest. npm 11 warns about install scripts that
  // allowScripts does not list (it runs them all still); better-sqlite3's is listed as the repository's is.
  writeFileSync(
    join(app, 'package.json'),
    `${JSON.stringify({ name: 'corral-user', private: true, type: 'module', allowScripts: { 'better-sqlite3': true } }, null, 2)}\n`,
  );
  // The compiler and the adapters' frameworks at the versions the repository uses, so npm's cache has them.
  const dev = rootManifest.devDependencies ?? {};
  const extras = ['typescript', '@types/node', 'ai', '@langchain/core', 'zod'].map((name) => `${name}@${dev[name]}`);
  const prebuilds = localPrebuilds(join(work, 'prebuilds'));
  const install = await timed('install', () =>
    run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', ...packed.map((p) => join(tarballs, p.filename)), ...extras], {
      cwd: app,
      env: cleanEnv(prebuilds ? { npm_config_better_sqlite3_local_prebuilds: prebuilds } : {}),
      timeoutMs: 480_000,
    }),
  );
  if (install.code !== 0) throw new Error(`npm install of the tarballs failed: ${explain(install)}`);
  const binary = 'better-sqlite3/build/Release/better_sqlite3.node';
  const same = readFileSync(join(app, 'node_modules', binary)).equals(
    readFileSync(join(dirname(rootRequire.resolve('better-sqlite3/package.json')), '..', binary)),
  );
  sqliteFrom = same ? "the repository's build, as a local prebuild" : 'source, compiled during the install';
}, 600_000);

afterAll(() => {
  console.log(`packed packages, installed and used (ms): ${JSON.stringify(timings)}; better-sqlite3 from ${sqliteFrom}`);
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('the packed packages, installed in an empty folder', () => {
  it('each tarball holds its files, sources and entry points, and nothing else', () => {
    expect(packed.map((p) => p.name).sort()).toEqual(PUBLISHED.map((w) => w.manifest.name).sort());
    for (const { dir, manifest } of PUBLISHED) {
      const files = packed.find((p) => p.name === manifest.name)!.files.map((f) => f.path);
      const has = new Set(files);
      const where = `${manifest.name}: `;
      // Top-level entries: what `files` names (globs too), plus what npm always adds.
      const declared = [...(manifest.files ?? []), 'package.json', 'README.md'].map((f) => globSegment(f.split('/')[0]!));
      for (const entry of new Set(files.map((f) => f.split('/')[0]!)))
        expect(
          declared.some((d) => d.test(entry)),
          where + entry,
        ).toBe(true);
      // Nothing private: tests, build state, installed dependencies, node-gyp's output.
      for (const f of files)
        expect(f, where + f).not.toMatch(/(^|\/)(test|tests|__tests__|node_modules)\/|^build\/|\.test\.|\.tsbuildinfo$/);
      // Every entry point is in the tarball.
      const targets: string[] = [];
      const collect = (value: unknown) => {
        if (typeof value === 'string') targets.push(value);
        else if (value && typeof value === 'object') for (const v of Object.values(value)) collect(v);
      };
      collect(manifest.exports);
      collect(manifest.bin);
      if (manifest.main) targets.push(manifest.main);
      if (manifest.types) targets.push(manifest.types);
      for (const target of targets.filter((t) => !t.includes('*'))) expect(has.has(target.replace(/^\.\//, '')), where + target).toBe(true);
      // TypeScript packages: every source file is built, and shipped so the source maps resolve.
      const srcDir = join(ROOT, dir, 'src');
      if (existsSync(srcDir)) {
        const sources = (readdirSync(srcDir, { recursive: true }) as string[])
          .filter((f) => f.endsWith('.ts'))
          .map((f) => f.split(sep).join('/'));
        expect(sources.length).toBeGreaterThan(0);
        for (const f of sources) {
          const base = f.replace(/\.ts$/, '');
          for (const out of [`src/${f}`, `dist/${base}.js`, `dist/${base}.d.ts`, `dist/${base}.js.map`])
            expect(has.has(out), where + out).toBe(true);
        }
        // Built files with no source of their own (scripts/bundle.mjs): the sandbox worker bundled,
        // and the chunks a bundled package's entry points share.
        if (manifest.name === '@corral/node')
          for (const bundle of ['dist/worker.bundle.js', 'dist/worker.bundle.cjs']) expect(has.has(bundle), `${where}${bundle}`).toBe(true);
        const bundled = (f: string) => f === 'dist/worker.bundle.js' || /^dist\/_chunk-[\w-]+\.js$/.test(f);
        for (const f of files.filter((f) => f.startsWith('dist/') && f.endsWith('.js') && !bundled(f))) {
          expect(has.has(f.replace(/^dist\//, 'src/').replace(/\.js$/, '.ts')), `${where}${f} has no source`).toBe(true);
        }
      }
    }
    // The tools package: each tool's spec, both builds, the component as jco transpiled it, its compiled validators, and its examples; not the sources.
    const tools = packed.find((p) => p.name === '@corral/tools')!.files.map((f) => f.path);
    for (const tool of BUNDLED) {
      expect(tools).toEqual(
        expect.arrayContaining([
          `${tool}/tool-spec.json`,
          `${tool}/${tool}.wasm`,
          `${tool}/${tool}.module.wasm`,
          `${tool}/${tool}.prepared.json`,
          `${tool}/${tool}.validators.json`,
        ]),
      );
    }
    expect(tools).toContain('diff-summary/examples/example.diff.json');
    // Which specs the build validated, so an installed host does not validate them again at each start.
    expect(tools).toContain('validated-specs.json');
    // No tool sources; an example's workspace (files a tool is shown searching) is data, not source.
    expect(tools.filter((f) => !/^[^/]+\/examples\//.test(f) && /\/src\/|^lib|\.(c|h|sh)$/.test(f))).toEqual([]);
  });

  it('installs nothing from the repository: real folders, no links out', () => {
    for (const name of PUBLISHED.map((w) => w.manifest.name)) {
      const dir = join(app, 'node_modules', name);
      expect(realpathSync(dir), name).toBe(dir);
    }
  });

  it('corral tools lists the bundled tools', async () => {
    const r = await timed('tools', () => npx(['corral', 'tools']));
    expect(r.code, explain(r)).toBe(0);
    expect(r.stdout).toMatch(/^diff-summary@1\.1\.0 /m);
    expect(r.stdout).toMatch(/^file-stats@1\.0\.0 /m);
    expect(r.stderr).toBe('');
  });

  it('corral run diff-summary summarizes the example the tools package ships', async () => {
    const example = 'node_modules/@corral/tools/diff-summary/examples/example.diff.json';
    const r = await timed('run', () => npx(['corral', 'run', 'diff-summary', '--input-file', example]));
    expect(r.code, explain(r)).toBe(0);
    const output = JSON.parse(r.stdout) as { files: unknown[]; summary: string };
    expect(output.files).toHaveLength(3);
    expect(output.summary).toMatch(/^3 files changed/);
  });

  it('corral mcp answers initialize, tools/list and tools/call over stdio', async () => {
    const example = JSON.parse(readFileSync(join(app, 'node_modules/@corral/tools/diff-summary/examples/example.diff.json'), 'utf8'));
    const messages = [
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'pack-test', version: '0' } },
      },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 2, method: 'tools/list' },
      { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'diff-summary', arguments: example } },
    ];
    const r = await timed('mcp', () => mcpSession(messages));
    expect(r.code, explain(r)).toBe(0);
    const replies = new Map(
      r.stdout
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as { id?: number; result?: Record<string, unknown> })
        .map((m) => [m.id, m.result] as const),
    );
    expect(replies.get(1)).toMatchObject({ serverInfo: { name: 'corral' } });
    const listed = replies.get(2) as { tools: { name: string }[] };
    expect(listed.tools.map((t) => t.name).sort()).toEqual(BUNDLED);
    expect(replies.get(3)?.isError).not.toBe(true);
    expect(replies.get(3)).toMatchObject({ structuredContent: { summary: expect.stringMatching(/^3 files changed/) } });
  });

  it('a strict TypeScript program using every package compiles and runs', async () => {
    mkdirSync(join(app, 'src'));
    cpSync(join(ROOT, 'test/install/consumer/consumer.ts'), join(app, 'src/consumer.ts'));
    cpSync(join(ROOT, 'examples'), join(app, 'examples'), { recursive: true });
    const options = { strict: true, target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', types: ['node'] };
    // Our declarations are checked too (skipLibCheck off), with the DOM for @corral/browser's.
    writeFileSync(
      join(app, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: { ...options, lib: ['ES2023', 'DOM'], outDir: 'out', skipLibCheck: false }, include: ['src'] }),
    );
    // The README's adapter examples, as `tsc --init` sets a project up: ai's own declarations need
    // @types/json-schema, which it does not install, so library checks stay off here.
    writeFileSync(
      join(app, 'tsconfig.examples.json'),
      JSON.stringify({ compilerOptions: { ...options, noEmit: true, skipLibCheck: true }, include: ['examples'] }),
    );
    // As a Vite project resolves modules. Before: @corral/core's ajv.d.ts failed there ("Property 'default' does not exist").
    writeFileSync(
      join(app, 'tsconfig.bundler.json'),
      JSON.stringify({
        compilerOptions: {
          ...options,
          module: 'ESNext',
          moduleResolution: 'Bundler',
          lib: ['ES2023', 'DOM'],
          noEmit: true,
          skipLibCheck: false,
        },
        include: ['src'],
      }),
    );
    const tsc = join(app, 'node_modules/typescript/bin/tsc');
    for (const project of ['tsconfig.json', 'tsconfig.examples.json', 'tsconfig.bundler.json']) {
      const r = await timed(`tsc ${project}`, () => run(process.execPath, [tsc, '--project', project], { cwd: app }));
      expect(r.code, `${project}: ${explain(r)}`).toBe(0);
    }
    const r = await timed('consumer', () => run(process.execPath, ['out/consumer.js'], { cwd: app }));
    expect(r.code, explain(r)).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      tools: BUNDLED,
      files: 3,
      summary: expect.stringMatching(/^3 files changed/),
      mcp: 'object',
      browser: BUNDLED,
      isError: true,
    });
  });

  it('every export of every package loads in Node', async () => {
    const specifiers: string[] = [];
    for (const { manifest } of PUBLISHED) {
      for (const key of Object.keys(manifest.exports ?? { '.': null })) {
        if (key.includes('*') || key.endsWith('.json')) continue;
        specifiers.push(key === '.' ? manifest.name : `${manifest.name}/${key.replace(/^\.\//, '')}`);
      }
    }
    const script = `for (const s of ${JSON.stringify(specifiers)}) await import(s);\nconsole.log('ok');`;
    const r = await timed('imports', () => run(process.execPath, ['--input-type=module', '-e', script], { cwd: app }));
    expect(r.code, explain(r)).toBe(0);
    expect(r.stdout).toBe('ok\n');
  });

  it('Vite bundles @corral/browser with the tools’ .wasm: a build emits them, the dev server serves them', async () => {
    const web = join(app, 'web');
    mkdirSync(web);
    writeFileSync(join(web, 'index.html'), '<!doctype html><script type="module" src="./main.js"></script>\n');
    writeFileSync(
      join(web, 'main.js'),
      "import { bundledTools } from '@corral/browser';\ndocument.body.textContent = bundledTools.map((t) => t.wasmUrl).join(' ');\n",
    );
    const vite = join(dirname(rootRequire.resolve('vite/package.json')), 'bin/vite.js');
    const build = await timed('vite build', () => run(process.execPath, [vite, 'build', '--logLevel', 'warn'], { cwd: web }));
    expect(build.code, explain(build)).toBe(0);
    const assets = readdirSync(join(web, 'dist/assets'));
    const wasm = BUNDLED.flatMap((name) => [name, `${name}.module`]);
    for (const name of wasm)
      expect(
        assets.some((a) => new RegExp(`^${name.replace('.', '\\.')}-[\\w-]+\\.wasm$`).test(a)),
        name,
      ).toBe(true);

    // Dev: the page imports the pre-bundled @corral/browser; every .wasm URL in it must fetch a wasm file.
    writeFileSync(
      join(web, 'dev-check.mjs'),
      `const { createServer } = await import(${JSON.stringify(join(dirname(vite), '../dist/node/index.js'))});
const server = await createServer({ root: process.cwd(), logLevel: 'warn', clearScreen: false, server: { host: '127.0.0.1', port: 0 } });
await server.listen();
try {
  const base = server.resolvedUrls.local[0];
  const get = async (u) => { const r = await fetch(u); if (!r.ok) throw new Error(u + ': HTTP ' + r.status); return r; };
  const main = await (await get(new URL('main.js', base))).text();
  const dep = new URL(main.match(/from\\s+["']([^"']*@corral_browser[^"']*)["']/)[1], base);
  const code = await (await get(dep)).text();
  const found = [];
  for (const m of code.matchAll(/new URL\\(["']([^"']+\\.wasm)["'],\\s*(?:'' \\+ )?import\\.meta\\.url\\)/g)) {
    const bytes = new Uint8Array(await (await get(new URL(m[1], dep))).arrayBuffer());
    found.push({ url: m[1], wasm: bytes[0] === 0 && bytes[1] === 0x61 && bytes[2] === 0x73 && bytes[3] === 0x6d });
  }
  console.log(JSON.stringify({ dep: dep.pathname, found }));
} finally {
  await server.close();
}
`,
    );
    const dev = await timed('vite dev', () => run(process.execPath, ['dev-check.mjs'], { cwd: web }));
    expect(dev.code, explain(dev)).toBe(0);
    const result = JSON.parse(dev.stdout.trim().split('\n').pop()!) as { dep: string; found: { url: string; wasm: boolean }[] };
    expect(result.dep, 'Vite pre-bundles the installed @corral/browser').toMatch(/\/node_modules\/\.vite\/deps\//);
    expect(result.found.map((f) => f.url.split('/').pop()).sort()).toEqual(wasm.map((n) => `${n}.wasm`).sort());
    expect(result.found.every((f) => f.wasm)).toBe(true);
  });
});

/**
 * One `corral mcp` session: each request (with the notifications before it)
 * is written once the previous reply has arrived; stdin closes after the
 * last reply, which must end the server with exit 0.
 */
function mcpSession(messages: { id?: number }[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn('npx', ['--no', 'corral', 'mcp', '--no-watch'], { cwd: app, env: cleanEnv(), stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let sent = 0;
    let awaiting: number | undefined;
    const sendNext = () => {
      awaiting = undefined;
      while (sent < messages.length && awaiting === undefined) {
        const message = messages[sent++]!;
        child.stdin.write(`${JSON.stringify(message)}\n`);
        awaiting = message.id;
      }
      if (awaiting === undefined) child.stdin.end();
    };
    const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
    child.stdout.setEncoding('utf8').on('data', (s: string) => {
      stdout += s;
      const ids = stdout.split('\n').flatMap((line) => {
        try {
          return [(JSON.parse(line) as { id?: number }).id];
        } catch {
          return [];
        }
      });
      if (awaiting !== undefined && ids.includes(awaiting)) sendNext();
    });
    child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    sendNext();
  });
}
