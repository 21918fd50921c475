/**
 * Loading tools from disk: a folder holding `tool-spec.json` (plus its wasm),
 * or a folder of such folders. Node-only; the core registry never touches files.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import {
  CorralError,
  ErrorCodes,
  adapterReallocProblem,
  detectWasmKind,
  parseSpec,
  type ErrorDetails,
  type PrebuiltValidators,
  type Registry,
  type Tool,
} from '@corral/core';
import { packageRequire } from './package-files.js';

const SPEC_FILE = 'tool-spec.json';

/**
 * Register every tool in `dir` and its immediate subfolders. One broken tool
 * does not stop the others: its error is collected and loading goes on.
 */
export async function loadToolFolder(registry: Registry, dir: string): Promise<{ loaded: Tool[]; errors: CorralError[] }> {
  const loaded: Tool[] = [];
  const errors: CorralError[] = [];
  let specPaths: string[];
  try {
    specPaths = await findSpecs(resolve(dir));
  } catch (err) {
    const missing = (err as NodeJS.ErrnoException).code === 'ENOENT';
    const why = missing ? 'does not exist' : `cannot be read (${(err as Error).message})`;
    errors.push(registrationError(`Tool folder ${dir} ${why}`, { dir }));
    return { loaded, errors };
  }
  for (const specPath of specPaths) {
    try {
      loaded.push(await loadToolFiles(registry, specPath));
    } catch (err) {
      errors.push(CorralError.is(err) ? err : registrationError(`${specPath}: ${(err as Error).message}`, { source: specPath }));
    }
  }
  return { loaded, errors };
}

/**
 * Register one tool from its spec file. The wasm is `wasmPath` when given
 * (`corral run --wasm FILE --spec FILE`), else the spec's `component`
 * relative to the spec file. Throws CorralError E_REGISTRATION.
 */
export async function loadToolFiles(registry: Registry, specPath: string, wasmPath?: string): Promise<Tool> {
  const raw = await readSpecJson(specPath);
  const built = builtSpecs().get(createHash('sha256').update(JSON.stringify(raw)).digest('hex'));
  // Validate before touching `component`, so a bad spec reports its own problems.
  const spec = parseSpec(raw, specPath, { validated: built !== undefined });
  const wasmFile = wasmPath ?? resolve(dirname(specPath), spec.component);
  let wasm: Uint8Array;
  try {
    wasm = new Uint8Array(await readFile(wasmFile));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'does not exist' : `cannot be read (${(err as Error).message})`;
    throw registrationError(`${specPath}: the wasm file ${wasmFile} ${why}`, { source: specPath, path: wasmFile });
  }
  // So a bad file is named by its own path.
  // Checked when Corral was built, for these very bytes (a bundled tool): not read again at every start.
  const checked = built?.checkedWasm !== undefined && createHash('sha256').update(wasm).digest('hex') === built.checkedWasm;
  if (!checked && detectWasmKind(wasm, wasmFile) === 'component') {
    // Refused, not warned about: such a tool passes its small tests and then
    // reads a large input short or traps in the adapter, a latent failure
    // that no call-time error explains. (Imports Corral does not provide stay
    // refused when the tool is first called, as E_NETWORK_BLOCKED or
    // E_REGISTRATION: that is where fallbacks apply.)
    const problem = reallocProblem(wasm, wasmPath ?? spec.component);
    if (problem)
      throw registrationError(`${specPath}: ${problem.message}. To fix it, ${problem.hint}`, { source: specPath, path: wasmFile });
  }
  // Validated above (or at build time): the registry need not validate it a second time.
  return registry.register(raw, wasm, specPath, { validated: true, ...(built ? { validators: built.validators } : {}) });
}

/** A bundled tool's spec as Corral's build checked it: its validators' code, and the SHA-256 of the wasm whose cabi_realloc it checked. */
interface BuiltSpec {
  validators: PrebuiltValidators;
  checkedWasm?: string;
}

let validatedSpecs: Map<string, BuiltSpec> | undefined;
/**
 * The bundled tools' specs that validateSpec accepted when Corral was built
 * (wasm-tools/validate-specs.mjs), by SHA-256 of JSON.stringify of the
 * parsed spec, with their validators' code: the same spec is not validated
 * again, nor its schemas compiled, nor its component's core modules read
 * for the cabi_realloc check (when its bytes are the ones checked), in
 * every process. Read only from the installed @corral/tools package (the
 * code runs as host code), never from a tool folder. Empty when the file is missing or unreadable, so every spec
 * is validated and compiled as usual.
 */
function builtSpecs(): Map<string, BuiltSpec> {
  if (!validatedSpecs) {
    validatedSpecs = new Map();
    try {
      const file = packageRequire.resolve('@corral/tools/validated-specs.json');
      const { format, specs } = JSON.parse(readFileSync(file, 'utf8')) as { format: unknown; specs: unknown };
      if (typeof format !== 'string' || typeof specs !== 'object' || specs === null) return validatedSpecs;
      for (const [sha256, code] of Object.entries(specs as Record<string, { input?: unknown; output?: unknown; checkedWasm?: unknown }>)) {
        if (typeof code?.input !== 'string' || !(code.output === undefined || typeof code.output === 'string')) continue;
        validatedSpecs.set(sha256, {
          validators: { format, input: code.input, ...(code.output === undefined ? {} : { output: code.output }) },
          ...(typeof code.checkedWasm === 'string' ? { checkedWasm: code.checkedWasm } : {}),
        });
      }
    } catch {
      // Missing or unreadable: nothing is taken as validated.
    }
  }
  return validatedSpecs;
}

/**
 * adapterReallocProblem, or undefined when the component's sections cannot
 * be read: a malformed component is refused when it is first prepared (jco
 * and the import check name what is wrong), as it was before this check;
 * `corral validate` reports it at once.
 */
function reallocProblem(wasm: Uint8Array, source: string): ReturnType<typeof adapterReallocProblem> {
  try {
    return adapterReallocProblem(wasm, source);
  } catch (err) {
    if (CorralError.is(err)) return undefined;
    throw err;
  }
}

/** `dir/tool-spec.json` and `dir/*\/tool-spec.json`, in a stable order. */
async function findSpecs(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const found: string[] = [];
  if (entries.some((e) => e.isFile() && e.name === SPEC_FILE)) found.push(join(dir, SPEC_FILE));
  const subdirs = entries
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
  for (const sub of subdirs) {
    const candidate = join(dir, sub, SPEC_FILE);
    // A subfolder without a spec is not a tool; skip it.
    if (
      await stat(candidate).then(
        (s) => s.isFile(),
        () => false,
      )
    )
      found.push(candidate);
  }
  return found;
}

async function readSpecJson(specPath: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(specPath, 'utf8');
  } catch (err) {
    throw registrationError(`Cannot read tool spec ${specPath}: ${(err as Error).message}`, { source: specPath });
  }
  text = text.replace(/^\uFEFF/, ''); // editors on Windows like to add a BOM
  try {
    return JSON.parse(text);
  } catch (err) {
    const offset = jsonErrorOffset(text);
    const at = offset < 0 ? '' : ` at ${lineColumn(text, offset)}`;
    throw registrationError(`${specPath} is not valid JSON${at}: ${(err as Error).message}`, {
      source: specPath,
      ...(offset < 0 ? {} : { offset }),
    });
  }
}

function registrationError(message: string, details: ErrorDetails<'E_REGISTRATION'>): CorralError {
  return new CorralError(ErrorCodes.REGISTRATION, message, details);
}

function lineColumn(text: string, offset: number): string {
  const before = text.slice(0, offset).split('\n');
  return `line ${before.length}, column ${before[before.length - 1]!.length + 1}`;
}

/**
 * Offset of the first JSON syntax error, or -1. V8's messages only sometimes
 * carry a position, so find it with a small recursive-descent scan.
 */
function jsonErrorOffset(text: string): number {
  let i = 0;
  const literal = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null/y;
  const fail = (): never => {
    throw i;
  };
  const ws = () => {
    while (text[i] === ' ' || text[i] === '\t' || text[i] === '\n' || text[i] === '\r') i++;
  };
  const expect = (c: string) => {
    ws();
    if (text[i] !== c) fail();
    i++;
  };
  const string = () => {
    expect('"');
    while (i < text.length && text[i] !== '"') {
      if (text[i]! < ' ') fail();
      if (text[i] === '\\') {
        const esc = /^(?:["\\/bfnrt]|u[0-9a-fA-F]{4})/.exec(text.slice(i + 1, i + 6));
        if (!esc) i++, fail();
        i += 1 + esc![0].length;
      } else i++;
    }
    expect('"');
  };
  const list = (close: string, item: () => void) => {
    i++;
    ws();
    if (text[i] === close) return void i++;
    for (;;) {
      item();
      ws();
      if (text[i] === ',') i++;
      else return expect(close);
    }
  };
  const value = (): void => {
    ws();
    if (text[i] === '{') return list('}', () => (string(), expect(':'), value()));
    if (text[i] === '[') return list(']', value);
    if (text[i] === '"') return string();
    literal.lastIndex = i;
    const m = literal.exec(text);
    if (!m) fail();
    i += m![0].length;
  };
  try {
    value();
    ws();
    if (i < text.length) fail();
    return -1;
  } catch (pos) {
    return pos as number;
  }
}
