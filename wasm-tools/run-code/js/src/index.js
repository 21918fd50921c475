/**
 * run-code for JavaScript: evaluates the snippet in `code` with the
 * engine this component carries (StarlingMonkey, SpiderMonkey built for
 * WASI, from @bytecodealliance/componentize-js) and answers
 * {stdout, stderr, exit_code, result?}. Built by `corral build` (see
 * ../../README.md); the engine supports `eval` and `new Function` at run
 * time, which is all this needs.
 *
 * What a snippet sees is a small part of Node's globals, enough for the
 * snippets agents write: `console` (log/info/debug to stdout, error/warn
 * to stderr, formatted like Node's util.inspect for the common values),
 * `process` (argv, env, exit, exitCode, stdout.write, stderr.write) and
 * `require('fs').readFileSync(0)` for stdin. There is no filesystem and
 * no network in this component at all: any other file read fails with
 * ENOENT, as a missing file does in Node; `fetch` does not exist.
 */

/** Thrown by process.exit: unwinds the snippet, never caught by it unless it catches everything. */
class Exit {
  constructor(code) {
    this.code = code;
  }
}

const IDENT = /^[A-Za-z_$][\w$]*$/;

function quote(s) {
  // util.inspect picks single quotes unless the string holds one.
  const q = !s.includes("'") ? "'" : !s.includes('"') ? '"' : !s.includes('`') ? '`' : "'";
  let out = '';
  for (const ch of s) {
    if (ch === q || ch === '\\') out += `\\${ch}`;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\t') out += '\\t';
    else if (ch === '\r') out += '\\r';
    else if (ch < ' ') out += `\\x${ch.charCodeAt(0).toString(16).padStart(2, '0').toUpperCase()}`;
    else out += ch;
  }
  return q + out + q;
}

/** Node's util.inspect for the values snippets print, on one line (Node breaks past 72 columns; this does not). */
function inspect(value, depth = 0, seen = []) {
  switch (typeof value) {
    case 'string':
      return quote(value);
    case 'number':
      return Object.is(value, -0) ? '-0' : String(value);
    case 'bigint':
      return `${value}n`;
    case 'boolean':
    case 'undefined':
      return String(value);
    case 'symbol':
      return value.toString();
    case 'function':
      return value.name ? `[Function: ${value.name}]` : '[Function (anonymous)]';
  }
  if (value === null) return 'null';
  if (seen.includes(value)) return '[Circular *1]';
  if (value instanceof Error) return value.stack ? `${value.name}: ${value.message}\n${value.stack.trimEnd()}` : String(value);
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? 'Invalid Date' : value.toISOString();
  if (value instanceof RegExp) return String(value);
  if (depth > 2) return Array.isArray(value) ? '[Array]' : '[Object]';
  const inner = [...seen, value];
  const show = (v) => inspect(v, depth + 1, inner);
  if (Array.isArray(value)) {
    if (value.length === 0) return '[]';
    const items = [];
    let holes = 0;
    for (let i = 0; i < value.length; i++) {
      if (!(i in value)) {
        holes++;
        continue;
      }
      if (holes) items.push(`<${holes} empty item${holes > 1 ? 's' : ''}>`), (holes = 0);
      items.push(show(value[i]));
    }
    if (holes) items.push(`<${holes} empty item${holes > 1 ? 's' : ''}>`);
    return `[ ${items.join(', ')} ]`;
  }
  if (value instanceof Map) {
    const items = [...value].map(([k, v]) => `${show(k)} => ${show(v)}`);
    return items.length ? `Map(${value.size}) { ${items.join(', ')} }` : 'Map(0) {}';
  }
  if (value instanceof Set) {
    const items = [...value].map(show);
    return items.length ? `Set(${value.size}) { ${items.join(', ')} }` : 'Set(0) {}';
  }
  const keys = Object.keys(value);
  const proto = Object.getPrototypeOf(value);
  const name =
    proto === null
      ? '[Object: null prototype] '
      : proto !== Object.prototype && proto.constructor?.name
        ? `${proto.constructor.name} `
        : '';
  if (keys.length === 0) return `${name}{}`;
  const items = keys.map((k) => `${IDENT.test(k) ? k : quote(k)}: ${show(value[k])}`);
  return `${name}{ ${items.join(', ')} }`;
}

/** console.log's formatting: strings as they are, anything else inspected; %s %d %i %f %j %o %O %% in a first string argument. */
function format(args) {
  if (args.length === 0) return '';
  let rest = args;
  let head = '';
  if (typeof args[0] === 'string' && args.length > 1 && args[0].includes('%')) {
    let i = 1;
    head = args[0].replace(/%([sdifjoO%])/g, (m, c) => {
      if (c === '%') return '%';
      if (i >= args.length) return m;
      const v = args[i++];
      if (c === 's') return typeof v === 'string' ? v : inspect(v);
      if (c === 'd' || c === 'i') return typeof v === 'bigint' ? `${v}n` : String(c === 'i' ? Number.parseInt(v, 10) : Number(v));
      if (c === 'f') return String(Number.parseFloat(v));
      if (c === 'j') return JSON.stringify(v);
      return inspect(v);
    });
    rest = args.slice(i);
    return [head, ...rest.map((a) => (typeof a === 'string' ? a : inspect(a)))].join(' ');
  }
  return rest.map((a) => (typeof a === 'string' ? a : inspect(a))).join(' ');
}

function fsError(code, syscall, path) {
  const text = { ENOENT: 'no such file or directory', EBADF: 'bad file descriptor' }[code];
  const err = new Error(`${code}: ${text}, ${syscall} '${path}'`);
  err.code = code;
  err.errno = code === 'ENOENT' ? -2 : -9;
  err.syscall = syscall;
  err.path = String(path);
  return err;
}

/** SpiderMonkey's out-of-memory exception: the string 'out of memory', or an InternalError saying so. */
function isOutOfMemory(e) {
  return e === 'out of memory' || (e instanceof Error && e.name === 'InternalError' && /out of memory/.test(e.message));
}

/**
 * Take what is left of the memory cap, in smaller and smaller blocks, so the
 * host sees the memory at its cap and reports E_RESOURCE_EXHAUSTED (memory):
 * the allocation that failed may have been a large one, leaving the peak
 * further below the cap than the host's margin (an eighth of the cap).
 */
function exhaustMemory() {
  const held = [];
  for (let size = 1 << 26; size >= 1 << 16; size >>= 1) {
    for (;;) {
      try {
        held.push(new ArrayBuffer(size));
      } catch {
        break;
      }
    }
  }
  return held.length;
}

/** What a network call does here: fail, as it does in Node on a machine without a network. */
function noNetwork(name) {
  return () => {
    throw new TypeError(`${name} failed`, { cause: new Error('no network: run-code snippets run without network access') });
  };
}

export default function handle(input) {
  const stdin = input.stdin ?? '';
  const out = [];
  const err = [];
  const log = (...args) => void out.push(`${format(args)}\n`);
  const warn = (...args) => void err.push(`${format(args)}\n`);
  const saved = { console: globalThis.console, process: globalThis.process, require: globalThis.require, fetch: globalThis.fetch };
  const process = {
    argv: ['node', ...(input.args ?? [])],
    env: {},
    platform: 'wasi',
    exitCode: undefined,
    exit(code) {
      throw new Exit(code ?? process.exitCode ?? 0);
    },
    stdout: { write: (s) => (out.push(String(s)), true) },
    stderr: { write: (s) => (err.push(String(s)), true) },
  };
  const fs = {
    readFileSync(path, options) {
      if (path === 0 || path === '/dev/stdin') {
        const encoding = typeof options === 'string' ? options : options?.encoding;
        return encoding ? stdin : new TextEncoder().encode(stdin);
      }
      // No wasi:filesystem in this component: nothing but stdin can be read.
      throw typeof path === 'number' ? fsError('EBADF', 'read', path) : fsError('ENOENT', 'open', path);
    },
    existsSync: () => false,
  };
  globalThis.console = { log, info: log, debug: log, error: warn, warn, trace: warn };
  globalThis.process = process;
  // The engine's fetch reaches an import this component does not have, and traps.
  globalThis.fetch = noNetwork('fetch');
  globalThis.require = (name) => {
    if (name === 'fs' || name === 'node:fs') return fs;
    const e = new Error(`Cannot find module '${name}'`);
    e.code = 'MODULE_NOT_FOUND';
    throw e;
  };

  let exitCode = 0;
  let result;
  try {
    // Indirect eval: global scope, like `node -e`; the completion value is the result.
    result = (0, eval)(input.code);
    exitCode = process.exitCode ?? 0;
  } catch (e) {
    if (e instanceof Exit) exitCode = Number(e.code) || 0;
    else if (isOutOfMemory(e)) {
      out.length = 0;
      err.length = 0;
      exhaustMemory();
      // The tool fails (the build's wrapper exits 1) with its memory at the cap: E_RESOURCE_EXHAUSTED.
      throw new Error('the snippet ran out of memory');
    } else {
      exitCode = 1;
      const stack = e instanceof Error && e.stack ? `\n${e.stack.trimEnd()}` : '';
      err.push(`Uncaught ${e instanceof Error ? `${e.name}: ${e.message}` : inspect(e)}${stack}\n`);
    }
  } finally {
    globalThis.console = saved.console;
    globalThis.process = saved.process;
    globalThis.require = saved.require;
    globalThis.fetch = saved.fetch;
  }
  const answer = { stdout: out.join(''), stderr: err.join(''), exit_code: exitCode };
  if (result !== undefined && exitCode === 0) answer.result = inspect(result);
  return answer;
}
