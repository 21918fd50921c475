/**
 * JavaScript and TypeScript: a tool is src/index.ts (or .js) whose default
 * export takes the input object and returns the output object. The build
 * transpiles TypeScript with the `typescript` package (transpileModule: no
 * type check), wraps the module in Corral's contract (stdin -> handler ->
 * stdout, errors as {"error":{"message"}} and exit 1), and makes a
 * wasi:cli command component with @bytecodealliance/componentize-js
 * (SpiderMonkey inside the component: about 11 MB, 10-30 s to build).
 *
 * The component's world exports wasi:cli/run and imports only stdin,
 * stdout, stderr and exit (plus what the engine itself needs: clocks,
 * random); fetch and the HTTP handler are switched off, so Corral's
 * no-network rule accepts it.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { access, copyFile, mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, extname, join, relative } from 'node:path';
import { MissingToolchain, writeBuilt, type BuildContext, type Language, type Scaffold } from './language.js';
import { EXAMPLES, readme, toolSpec } from './templates.js';
import { jcoEntry } from './toolchain.js';
import { packagePath } from '../package-files.js';

const COMPONENTIZE_JS = '@bytecodealliance/componentize-js';
const COMPONENTIZE_VERSION = '0.19.3';
const ENTRIES = ['index.ts', 'index.mts', 'index.js', 'index.mjs'];

/** `dir/node_modules/NAME`, or the same in a parent folder: where Node would find NAME from dir. */
export function findPackage(name: string, from: string): string | undefined {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return candidate;
    if (dirname(dir) === dir) return undefined;
  }
}

/** componentize-js from the tool folder, else the one Corral's jco depends on. */
function findComponentizeJs(dir: string): string {
  const found = findPackage(COMPONENTIZE_JS, dir) ?? findPackage(COMPONENTIZE_JS, dirname(jcoEntry()));
  if (!found)
    throw new MissingToolchain(
      `${COMPONENTIZE_JS} is not installed: run npm install --save-dev ${COMPONENTIZE_JS}@${COMPONENTIZE_VERSION} in ${dir}.`,
    );
  return found;
}

type TypeScript = typeof import('typescript');

/** typescript from the tool folder, else from where Corral is installed. */
function loadTypeScript(dir: string): TypeScript {
  for (const base of [join(dir, 'package.json'), packagePath('package.json')]) {
    let ts: TypeScript;
    try {
      ts = createRequire(base)('typescript') as TypeScript;
    } catch {
      continue; // not there: try the next place
    }
    // TypeScript 7 (the native compiler) has no transpileModule API in its package; 5.x does.
    if (!ts.version?.startsWith('5.')) {
      throw new MissingToolchain(
        `TypeScript sources need typescript 5.x (its transpileModule API); found typescript ${String(ts.version)}: run npm install --save-dev typescript@5 in ${dir}.`,
      );
    }
    return ts;
  }
  throw new MissingToolchain(`TypeScript sources need the typescript package: run npm install --save-dev typescript@5 in ${dir}.`);
}

export const js: Language = {
  name: 'js',

  scaffold(name: string): Scaffold {
    return {
      // SpiderMonkey starts at about 20 MB of memory; the first call also transpiles the 11 MB component.
      'tool-spec.json': toolSpec(name, { memory_mb: 128, timeout_ms: 10000 }),
      'src/index.ts': INDEX_TS,
      'tsconfig.json': `${JSON.stringify(TSCONFIG, null, 2)}\n`,
      ...EXAMPLES,
      'README.md': readme(name, 'TypeScript', 'src/index.ts', 'the default export', 'throw new Error(message)'),
      '.gitignore': `${name}.wasm\n`,
    };
  },

  async detect(dir: string): Promise<boolean> {
    for (const entry of ENTRIES) if (await exists(join(dir, 'src', entry))) return true;
    return false;
  },

  async build({ dir, out, log }: BuildContext): Promise<void> {
    let entry: string | undefined;
    for (const candidate of ENTRIES) if (!entry && (await exists(join(dir, 'src', candidate)))) entry = candidate;
    if (!entry) throw new Error(`no src/index.ts or src/index.js in ${dir}`);
    const componentize = findComponentizeJs(dir);
    const version = (JSON.parse(await readFile(join(componentize, 'package.json'), 'utf8')) as { version: string }).version;
    const jco = findPackage('@bytecodealliance/jco', componentize);
    if (!jco) throw new MissingToolchain(`${componentize} has no @bytecodealliance/jco next to it: reinstall ${COMPONENTIZE_JS}.`);

    const work = await mkdtemp(join(tmpdir(), 'corral-js-'));
    try {
      const ts = /\.m?ts$/.test(entry) ? loadTypeScript(dir) : undefined;
      log(ts ? `transpile src/ with typescript ${ts.version}` : 'copy src/');
      await stage(join(dir, 'src'), join(work, 'src'), ts);
      const main = entry.replace(/\.ts$/, '.js').replace(/\.mts$/, '.mjs');
      await writeFile(join(work, 'corral-main.js'), wrapper(`./src/${main}`));
      await mkdir(join(work, 'wit', 'deps'), { recursive: true });
      await writeFile(join(work, 'wit', 'world.wit'), WORLD_WIT);
      await writeFile(join(work, 'wit', 'deps', 'io.wit'), WASI_IO_WIT);
      await writeFile(join(work, 'wit', 'deps', 'cli.wit'), WASI_CLI_WIT);
      log(`componentize-js ${version} (SpiderMonkey; this takes 10-30 s)`);
      await runComponentize({
        componentize: join(componentize, 'src', 'componentize.js'),
        jco,
        sourcePath: join(work, 'corral-main.js'),
        witPath: join(work, 'wit'),
        out: join(work, 'component.wasm'),
        cwd: work,
      });
      await writeBuilt(dir, out, new Uint8Array(await readFile(join(work, 'component.wasm'))));
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  },
};

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

/** Copy src/ to the staging folder, TypeScript files transpiled to JavaScript. */
async function stage(from: string, to: string, ts: TypeScript | undefined): Promise<void> {
  await mkdir(to, { recursive: true });
  for (const entry of await readdir(from, { withFileTypes: true })) {
    const source = join(from, entry.name);
    if (entry.isDirectory()) {
      await stage(source, join(to, entry.name), ts);
    } else if (/\.m?ts$/.test(entry.name) && !entry.name.endsWith('.d.ts') && !entry.name.endsWith('.d.mts')) {
      if (!ts) throw new MissingToolchain(`${source} is TypeScript, and the typescript package is not installed.`);
      const result = ts.transpileModule(await readFile(source, 'utf8'), {
        fileName: source,
        reportDiagnostics: true,
        compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ES2022, sourceMap: false },
      });
      const errors = (result.diagnostics ?? []).filter((d) => d.category === ts.DiagnosticCategory.Error);
      if (errors.length > 0) {
        const lines = errors.map((d) => {
          const at = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start) : undefined;
          const where = at ? `${relative(dirname(from), source)}:${at.line + 1}:${at.character + 1}` : source;
          return `${where}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
        });
        throw new Error(`TypeScript syntax errors:\n${lines.join('\n')}`);
      }
      const ext = extname(entry.name) === '.mts' ? '.mjs' : '.js';
      await writeFile(join(to, entry.name.replace(/\.m?ts$/, ext)), result.outputText);
    } else if (entry.isFile()) {
      await copyFile(source, join(to, entry.name));
    }
  }
}

interface ComponentizeJob {
  componentize: string;
  jco: string;
  sourcePath: string;
  witPath: string;
  out: string;
  cwd: string;
}

/**
 * componentize-js runs in a child process: it needs a lot of memory once,
 * prints wizer's output on stdout, and (0.19.3) imports
 * @bytecodealliance/preview2-shim without depending on it, so the child
 * resolves that package from the jco next to it when Node cannot.
 */
function runComponentize(job: ComponentizeJob): Promise<void> {
  const child = packagePath('dist/author/componentize-child.js');
  return new Promise((resolve, reject) => {
    let output = '';
    const proc = spawn(process.execPath, [child, JSON.stringify(job)], { cwd: job.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    proc.stdout.setEncoding('utf8').on('data', (d: string) => (output += d));
    proc.stderr.setEncoding('utf8').on('data', (d: string) => (output += d));
    proc.on('error', reject);
    proc.on('close', (status) => {
      if (status === 0) resolve();
      else reject(new Error(`componentize-js failed:\n${output.trimEnd()}`));
    });
  });
}

/** Corral's contract around the tool's module: the component's wasi:cli/run. */
function wrapper(main: string): string {
  return `// Written by corral build: Corral's tool contract around ${main}.
import * as tool from ${JSON.stringify(main)};
import { getStdin } from 'wasi:cli/stdin@0.2.3';
import { getStdout } from 'wasi:cli/stdout@0.2.3';
import { getStderr } from 'wasi:cli/stderr@0.2.3';
import { exit } from 'wasi:cli/exit@0.2.3';

// The engine's console.log writes to stdout, into the JSON answer: send it to stderr.
console.log = console.error;
console.info = console.error;

function readAll(stream) {
  const chunks = [];
  let size = 0;
  for (;;) {
    let chunk;
    try {
      chunk = stream.blockingRead(1048576n);
    } catch (e) {
      if (e && e.payload && e.payload.tag === 'closed') break;
      throw e;
    }
    chunks.push(chunk);
    size += chunk.length;
  }
  const all = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    all.set(chunk, at);
    at += chunk.length;
  }
  return all;
}

// blocking-write-and-flush takes at most 4096 bytes at a time (wasi:io/streams).
function writeAll(stream, text) {
  const bytes = new TextEncoder().encode(text);
  for (let at = 0; at < bytes.length; at += 4096) stream.blockingWriteAndFlush(bytes.subarray(at, at + 4096));
}

function fail(message) {
  writeAll(getStdout(), JSON.stringify({ error: { message } }) + '\\n');
  writeAll(getStderr(), 'error: ' + message + '\\n');
  exit({ tag: 'err', val: undefined });
}

export const run = {
  run() {
    const handle = typeof tool.default === 'function' ? tool.default : tool.handle;
    if (typeof handle !== 'function') return fail('src/index exports no handler: export default function (input) { ... }');
    let input;
    try {
      input = JSON.parse(new TextDecoder().decode(readAll(getStdin())));
    } catch (e) {
      return fail('the input is not valid JSON: ' + (e instanceof Error ? e.message : String(e)));
    }
    let output;
    try {
      output = handle(input);
    } catch (e) {
      return fail(e instanceof Error ? e.message : String(e));
    }
    if (output !== null && typeof output === 'object' && typeof output.then === 'function')
      return fail('the handler returned a Promise: a Corral JavaScript tool answers synchronously');
    if (output === undefined) return fail('the handler returned nothing');
    writeAll(getStdout(), JSON.stringify(output) + '\\n');
  },
};
`;
}

const INDEX_TS = `/**
 * A Corral tool: the default export gets the input object (already checked
 * against input_schema in tool-spec.json) and returns the output object.
 * Throw an Error to fail: the tool prints {"error":{"message":...}} and exits 1.
 * console.log goes to stderr; the handler must be synchronous.
 */
interface Input {
  text: string;
}

interface Output {
  words: number;
  longest: string;
}

export default function handle(input: Input): Output {
  const words = input.text.split(/\\s+/).filter((word) => word !== '');
  let longest = '';
  for (const word of words) if ([...word].length > [...longest].length) longest = word;
  return { words: words.length, longest };
}
`;

/** For the editor and \`tsc --noEmit\` (corral build transpiles without type checks). */
const TSCONFIG = {
  compilerOptions: { target: 'ES2022', module: 'ES2022', moduleResolution: 'bundler', strict: true, noEmit: true, lib: ['ES2022', 'DOM'] },
  include: ['src'],
};

/*
 * The component's world, and the few WASI 0.2 interfaces it names, written
 * out here (componentize-js ships no WIT). Version 0.2.3 is the one the
 * engine itself imports; Corral accepts any 0.2.x.
 */
const WORLD_WIT = `package corral:tool;

world tool {
  import wasi:cli/stdin@0.2.3;
  import wasi:cli/stdout@0.2.3;
  import wasi:cli/stderr@0.2.3;
  import wasi:cli/exit@0.2.3;
  export wasi:cli/run@0.2.3;
}
`;

const WASI_CLI_WIT = `package wasi:cli@0.2.3;

interface run {
  run: func() -> result;
}

interface exit {
  exit: func(status: result);
}

interface stdin {
  use wasi:io/streams@0.2.3.{input-stream};
  get-stdin: func() -> input-stream;
}

interface stdout {
  use wasi:io/streams@0.2.3.{output-stream};
  get-stdout: func() -> output-stream;
}

interface stderr {
  use wasi:io/streams@0.2.3.{output-stream};
  get-stderr: func() -> output-stream;
}
`;

const WASI_IO_WIT = `package wasi:io@0.2.3;

interface error {
  resource error {
    to-debug-string: func() -> string;
  }
}

interface poll {
  resource pollable {
    ready: func() -> bool;
    block: func();
  }
  poll: func(in: list<borrow<pollable>>) -> list<u32>;
}

interface streams {
  use error.{error};
  use poll.{pollable};

  variant stream-error {
    last-operation-failed(error),
    closed,
  }

  resource input-stream {
    read: func(len: u64) -> result<list<u8>, stream-error>;
    blocking-read: func(len: u64) -> result<list<u8>, stream-error>;
    skip: func(len: u64) -> result<u64, stream-error>;
    blocking-skip: func(len: u64) -> result<u64, stream-error>;
    subscribe: func() -> pollable;
  }

  resource output-stream {
    check-write: func() -> result<u64, stream-error>;
    write: func(contents: list<u8>) -> result<_, stream-error>;
    blocking-write-and-flush: func(contents: list<u8>) -> result<_, stream-error>;
    flush: func() -> result<_, stream-error>;
    blocking-flush: func() -> result<_, stream-error>;
    subscribe: func() -> pollable;
    write-zeroes: func(len: u64) -> result<_, stream-error>;
    blocking-write-zeroes-and-flush: func(len: u64) -> result<_, stream-error>;
    splice: func(src: borrow<input-stream>, len: u64) -> result<u64, stream-error>;
    blocking-splice: func(src: borrow<input-stream>, len: u64) -> result<u64, stream-error>;
  }
}
`;
