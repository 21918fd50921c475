/**
 * jco's glue, made ready to run: a few rewrites of the pinned jco's output
 * (each pinned by a test, so a jco upgrade that changes that output fails
 * there first), then loaded as a function.
 */
import { CorralError, ErrorCodes } from '@corral/core/errors';
import { GLUE_REWRITES, REWRITTEN_MARK, rewrittenByOtherVersion } from './prepared-format.js';

export type Instantiate = (
  getCoreModule: (name: string) => WebAssembly.Module,
  imports: Record<string, unknown>,
  instantiateCore: (module: WebAssembly.Module, imports?: WebAssembly.Imports) => Promise<WebAssembly.Instance>,
) => Promise<Record<string, unknown>>;

/** The first line of a glue rewriteGlue made: glue rewritten by other code is refused, never run. */
const REWRITTEN = `${REWRITTEN_MARK}${GLUE_REWRITES}\n`;
/** The name under which loadGlue gives the rewritten glue the byte bound guardLiftedLists checks. */
const MAX_LIST_BYTES = '__corralMaxListBytes';

/**
 * jco's glue, checked and rewritten (everything here but the memory limit,
 * which loadGlue is given). Done once per component when it is prepared
 * (prepareComponent), so the first call in each worker does not spend
 * ~15 ms on it; a glue already rewritten by this code is kept as it is.
 * Throws E_REGISTRATION for a component whose glue Corral cannot guard.
 */
export function rewriteGlue(glue: string, toolName = 'component'): string {
  if (glue.startsWith(REWRITTEN)) return glue;
  if (rewrittenByOtherVersion(glue)) {
    throw new CorralError(
      ErrorCodes.REGISTRATION,
      `${toolName} was prepared by another version of Corral; prepare it again from its wasm.`,
      {
        reason: 'prepared_by_other_version',
      },
    );
  }
  checkExportNames(glue, toolName);
  const guarded = trapsEndTheInstance(refuseAsyncBuiltins(allocateEmptyStrings(glue), toolName), toolName);
  return REWRITTEN + capHandleTables(lighterHostCalls(guardLiftedLists(guarded, toolName)), toolName);
}

/** The glue of a component (jco's, or rewriteGlue's), rewritten and loaded for calls with this memory limit. */
export function prepareGlue(glue: string, toolName: string, maxListBytes?: number): Promise<Instantiate> {
  return loadGlue(rewriteGlue(glue, toolName), maxListBytes);
}

/** Every function the glue declares, jco's own and the wrappers of the component's exports. */
const FUNCTIONS = /^[ \t]*(?:async )?function\*? ?([\w$]+) ?\(/gm;
/** A wrapper of one of the component's exports, named by jco after the export. */
const EXPORT_WRAPPERS =
  /^[ \t]*function ([\w$]+)\([^)\n]*\) \{\n[ \t]*_debugLog\('\[iface="[^"\n]*", function="[^"\n]*"\]\[Instruction::CallWasm\] enter'/gm;
/** A declaration of constants, variables or a class, by its indentation: its names. */
const DECLARATION = /^( *)(?:const|let|var|class) ([\w$]+(?:, [\w$]+)*)/;
const IMPORT_BINDINGS = /^const \{ ([^}\n]*) \} = imports\[/;
/** The generator that makes the instances, where jco declares the export wrappers. */
const GENERATOR_START = 'let gen = (function* _initGenerator () {';

/**
 * The values the glue's own code reads by name from `instantiate`'s scope or
 * the generator's: `instantiate`'s parameters, the bindings of the imports,
 * and the constants, variables and classes jco declares at the top of
 * `instantiate` (unindented, or indented by two, in its output; outside the
 * bodies of its unindented functions) or at the top of the generator.
 */
function glueValues(glue: string): Set<string> {
  const values = new Set(['getCoreModule', 'imports', 'instantiateCore']);
  let block: 'generator' | 'other' | undefined;
  for (const line of glue.split('\n')) {
    if (line.startsWith('export function instantiate(')) continue;
    if (block !== undefined) {
      if (line.startsWith('}')) block = undefined;
      else if (block === 'generator') {
        const found = DECLARATION.exec(line);
        if (found?.[1] === '  ') for (const name of found[2]!.split(', ')) values.add(name);
      }
      continue;
    }
    const bindings = IMPORT_BINDINGS.exec(line);
    if (bindings) for (const binding of bindings[1]!.split(',')) values.add(binding.split(':').at(-1)!.trim());
    const found = DECLARATION.exec(line);
    if (found && found[1]!.length <= 2) for (const name of found[2]!.split(', ')) values.add(name);
    // An unindented line that opens a block (a function, a class, the generator) until an unindented `}`.
    if (/^\S/.test(line) && line.trimEnd().endsWith('{')) block = line.startsWith(GENERATOR_START) ? 'generator' : 'other';
  }
  return values;
}

/**
 * Refuse a component whose exports jco names like its glue's own functions
 * and values. jco 1.15.4 names the JS function wrapping an export after it
 * (`rsc-table-create-own` becomes `rscTableCreateOwn`), in a scope where it
 * hides the glue's function of the same name: the glue then calls the
 * guest's code in its place, the handle cap (capHandleTables) included.
 * jco keeps some of its names apart (`handle-tables` is `handleTables$1`)
 * but not all. Its own functions never share a name, so a function name
 * declared twice, or an export named like a value of the glue's
 * (glueValues), is such a collision. A few names the glue declares but
 * reads only outside the generator (`promise`, `gen`) are refused too:
 * simpler than telling them apart, and no loss for a command's exports.
 */
export function checkExportNames(glue: string, toolName = 'component'): void {
  const declared = new Map<string, number>();
  for (const [, name] of glue.matchAll(FUNCTIONS)) declared.set(name!, (declared.get(name!) ?? 0) + 1);
  const scope = glueValues(glue);
  const wrappers = new Set([...glue.matchAll(EXPORT_WRAPPERS)].map((m) => m[1]!));
  const clashes = [...declared].filter(([name, count]) => count > 1 || (wrappers.has(name) && scope.has(name))).map(([name]) => name);
  if (clashes.length > 0) {
    throw new CorralError(
      ErrorCodes.REGISTRATION,
      `${toolName} exports functions that jco names like its own glue's (${clashes.join(', ')}); rename those exports.`,
      { reason: 'export_shadows_glue', exports: clashes },
    );
  }
}

/**
 * jco's glue exports one function and imports nothing; its one use of the
 * module's own URL is a default for `getCoreModule`, which Corral always passes.
 */
const GLUE_EXPORT = /^export function instantiate\(/m;
const MODULE_URL = /import\.meta\.url/g;
const MODULE_SYNTAX = /^\s*(?:import|export)\b/gm;

/**
 * The glue's `instantiate`, evaluated as a strict function body: importing it
 * from a data: URL made Node's module loader resolve and parse a ~300 KB URL,
 * 5–14 ms of a tool's first call in each worker. Each load gets its own copy
 * of the glue's top-level state, as each compile of the tool gets its own
 * modules. A glue of another shape, or a host that refuses eval (a page whose
 * CSP allows data: scripts only), imports it from a data: URL as before.
 * `maxListBytes` bounds the byte lists one host call lifts (guardLiftedLists).
 */
export async function loadGlue(source: string, maxListBytes = 2 ** 32): Promise<Instantiate> {
  if (GLUE_EXPORT.test(source) && source.match(MODULE_SYNTAX)?.length === 1) {
    const body = `'use strict';\n${source.replace(GLUE_EXPORT, 'function instantiate(').replace(MODULE_URL, 'undefined')}\nreturn instantiate;`;
    try {
      return new Function(MAX_LIST_BYTES, body)(maxListBytes) as Instantiate;
    } catch (err) {
      // Eval refused, or a glue that only parses as a module (say, a top-level await).
      if (!(err instanceof EvalError || err instanceof SyntaxError)) throw err;
    }
  }
  // The glue has no imports of its own, so it loads from a data: URL in any host.
  // Dots are escaped too: Bun reads the text after the URL's last '.' as a file
  // extension and then loads the glue as CommonJS, without its exports.
  const module = `const ${MAX_LIST_BYTES} = ${maxListBytes};\n${source}`;
  const url = 'data:text/javascript;charset=utf-8,' + encodeURIComponent(module).replaceAll('.', '%2E');
  return ((await import(/* @vite-ignore */ url)) as { instantiate: Instantiate }).instantiate;
}

/**
 * Lower every string through the guest's realloc, empty ones too, as the
 * canonical ABI does (store_string_copy always calls realloc). jco 1.15.4's
 * glue skips the call for '' and hands back pointer 1; the preview1
 * adapter lays out environ and argv by counting its realloc calls, so an
 * empty value (`NAME=`) lost its terminating NUL and ran into the next
 * variable.
 */
export function allocateEmptyStrings(glue: string): string {
  return glue.replace(
    /(function utf8Encode\(s, realloc, memory\) \{\n\s*if \(typeof s !== 'string'\) throw new TypeError\('expected a string'\);)\n\s*if \(s\.length === 0\) \{\n\s*utf8EncodedLen = 0;\n\s*return 1;\n\s*\}/,
    '$1',
  );
}

/**
 * What jco 1.15.4's glue does on every call from the guest into the host,
 * and on the call of `run`, that a tool walking a mount pays a dozen times
 * per file (issue 13) and the smallest tool ~20 times per call:
 *   - `_debugLog(...)`, called several times per call, reads
 *     `process.env.JCO_DEBUG` each time, a lookup in the environment. It is
 *     never set in a sandbox worker (started with an empty environment) nor
 *     in a browser, so it becomes a function that does nothing, and each
 *     call of it a statement that does not build its arguments either.
 *   - `startCurrentTask` and `endCurrentTask` keep a stack of task records
 *     (a BigInt id, an AsyncTask with private fields and a promise) that
 *     only the component model's async ABI reads (`prepareCall`,
 *     `asyncStartCall` and the intrinsics built on `getCurrentTask`). In a
 *     glue where nothing else reads them, both do nothing. Elsewhere the
 *     task record gets a class whose `task` is built when first read. (An
 *     object literal with a getter, tried first, cost more per call than
 *     the task it saved.)
 * Together 12–15% of an in-process call of a trivial component.
 * A glue of another shape is left as it is (a test checks that these match
 * the pinned jco's glue).
 */
export function lighterHostCalls(glue: string): string {
  const quiet = glue.replace(
    /const _debugLog = \(\.\.\.args\) => \{\n\s*if \(!globalThis\?\.process\?\.env\?\.JCO_DEBUG\) \{ return; \}\n\s*console\.debug\(\.\.\.args\);\n\}/,
    'const _debugLog = () => {};',
  );
  const lighter =
    quiet === glue
      ? glue
      : // Statements only: `false && f(...)` evaluates nothing, and no value is read.
        quiet.replace(/^([ \t]*)_debugLog\(/gm, '$1false && _debugLog(');
  return tasksNobodyReads(lighter) ? withoutTasks(lighter) : withLazyTasks(lighter);
}

/**
 * The glue's functions that keep or read its task stacks, as jco 1.15.4 writes them, parameters
 * and all: a component's own export of the same name (`start-current-task`, refused anyway by
 * checkExportNames) would be a function of the glue too, with other parameters.
 */
const TASK_FUNCTIONS =
  /^([ \t]*)function (startCurrentTask|endCurrentTask|prepareCall|asyncStartCall)\((?:componentIdx, isAsync, entryFnName|componentIdx, taskId|memoryIdx|callbackIdx, postReturnIdx)\) \{\n[\s\S]*?\n\1\}\n/gm;
const TASK_STATE =
  /\b(ASYNC_CURRENT_TASK_IDS|ASYNC_CURRENT_COMPONENT_IDXS|ASYNC_TASKS_BY_COMPONENT_IDX|getCurrentTask|prepareCall|asyncStartCall)\b/;

/**
 * True when the glue has jco 1.15.4's two task functions and nothing but
 * them (and the async helpers, when no one calls those) touches the task
 * stacks, nor reads the id `startCurrentTask` returns.
 */
function tasksNobodyReads(glue: string): boolean {
  const found = new Set([...glue.matchAll(TASK_FUNCTIONS)].map((m) => m[2]));
  if (!found.has('startCurrentTask') || !found.has('endCurrentTask')) return false;
  const rest = glue
    .replace(TASK_FUNCTIONS, '')
    .replace(
      /^[ \t]*const (ASYNC_TASKS_BY_COMPONENT_IDX = new Map\(\)|ASYNC_CURRENT_TASK_IDS = \[\]|ASYNC_CURRENT_COMPONENT_IDXS = \[\]);?\n/gm,
      '',
    )
    .replace(/\bconst _\w+_currentTaskID = startCurrentTask\(/g, 'startCurrentTask(');
  return !TASK_STATE.test(rest) && !/_currentTaskID\b/.test(rest);
}

function withoutTasks(glue: string): string {
  return glue.replace(TASK_FUNCTIONS, (fn, indent: string, name: string) =>
    name === 'startCurrentTask' || name === 'endCurrentTask' ? `${indent}function ${name}() {}\n` : fn,
  );
}

function withLazyTasks(glue: string): string {
  return glue
    .replace(
      /const newTask = new AsyncTask\(\{ id: nextId, componentIdx, isAsync, entryFnName \}\);\n(\s*)const newTaskMeta = \{ id: nextId, componentIdx, task: newTask \};/,
      'const newTaskMeta = new CorralTaskMeta(nextId, componentIdx, isAsync, entryFnName);',
    )
    .replace(
      /\n([ \t]*)let NEXT_TASK_ID = 0n;/,
      `\n$1class CorralTaskMeta {
$1  #task;
$1  constructor(id, componentIdx, isAsync, entryFnName) {
$1    this.id = id;
$1    this.componentIdx = componentIdx;
$1    this.isAsync = isAsync;
$1    this.entryFnName = entryFnName;
$1  }
$1  get task() {
$1    return (this.#task ??= new AsyncTask({ id: this.id, componentIdx: this.componentIdx, isAsync: this.isAsync, entryFnName: this.entryFnName }));
$1  }
$1}
$1let NEXT_TASK_ID = 0n;`,
    );
}

/** Elements the glue may lift from guest memory, one at a time, for one call into the host (the cap on a poll list). */
export const MAX_LIFTED_ELEMENTS = 65536;
/** Bytes of strings the glue may decode for one call into the host: WASI's strings are paths and names (a path is at most 4,096 bytes). */
export const MAX_LIFTED_STRING_BYTES = 1 << 20;

/**
 * Bound what jco's glue lifts from guest memory into JS for one call into
 * the host, before any host function can check its arguments; a lying
 * component may declare lists and strings anywhere.
 *   - Elements lifted one at a time (any list but list<u8> and its kin):
 *     each lifting loop of jco 1.15.4 (`for (let i = 0; i < lenN; i++)`,
 *     lenN read from the guest) first adds its length, read unsigned (a
 *     negative length switched the count off), to a count reset when the
 *     guest calls into the host (a `trampolineN`), so nested lists that
 *     alias one another count too. 200 million elements grew one array past
 *     the worker's heap limit in one step, and Node aborted the whole
 *     process (nodejs/node#47224).
 *   - Bytes: a string decoded from guest memory becomes a JS string on the
 *     heap, and 65,536 strings may all name the same 400 MB (that aborted
 *     the host too), so strings are counted against MAX_LIFTED_STRING_BYTES;
 *     a list<u8> is a copy of guest memory outside the heap, counted against
 *     the `maxListBytes` loadGlue is given (the call's memory limit: one honest list is never
 *     larger; twelve aliased ones reached 3.5 GB of RSS).
 * Past a bound the call traps. Required: a glue that decodes strings or
 * copies lists in another shape is refused.
 */
export function guardLiftedLists(glue: string, toolName = 'component'): string {
  const elements = '__corralLifted';
  const strings = '__corralStringBytes';
  const bytes = '__corralListBytes';
  const decodes = glue.match(DECODES)?.length ?? 0;
  const copies = glue.match(COPIES)?.length ?? 0;
  let guardedDecodes = 0;
  let guardedCopies = 0;
  const guarded = glue
    .replace(/(function trampoline\d+\([^)]*\) \{)/g, `$1 ${elements} = 0; ${strings} = 0; ${bytes} = 0;`)
    .replace(
      /for \(let (\w+) = 0; \1 < (len\d+); \1\+\+\) \{/g,
      (loop, _i, len: string) =>
        `if ((${elements} += ${len} >>> 0) > ${MAX_LIFTED_ELEMENTS}) throw new TypeError('a list argument of more than ${MAX_LIFTED_ELEMENTS} elements'); ${loop}`,
    )
    .replace(DECODE_VIEW, (_call, decoder: string, view: string) => {
      guardedDecodes++;
      return `${decoder}.decode(__corralStrings(${view}))`;
    })
    .replace(COPY_SLICE, (_call, memory: string, ptr: string, len: string, size: string) => {
      guardedCopies++;
      return `${memory}.buffer.slice(${ptr}, ${ptr} + __corralBytes(${len} * ${size}))`;
    });
  if (guardedDecodes !== decodes || guardedCopies !== copies) {
    throw new CorralError(ErrorCodes.REGISTRATION, `${toolName}'s glue lifts strings or lists in a shape Corral cannot bound.`, {
      reason: 'unguarded_host_calls',
    });
  }
  return `let ${elements} = 0, ${strings} = 0, ${bytes} = 0;
function __corralStrings(view) {
  if ((${strings} += view.byteLength) > ${MAX_LIFTED_STRING_BYTES}) throw new TypeError('string arguments of more than ${MAX_LIFTED_STRING_BYTES} bytes');
  return view;
}
function __corralBytes(n) {
  if ((${bytes} += Math.max(0, n)) > ${MAX_LIST_BYTES}) throw new TypeError('list arguments of more than ' + ${MAX_LIST_BYTES} + ' bytes');
  return n;
}
${guarded}`;
}

/** Where the glue decodes a string from guest memory, and where it copies a list of bytes (or numbers) out of it. */
const DECODES = /\butf(?:8|16)Decoder\.decode\(/g;
const DECODE_VIEW = /\b(utf(?:8|16)Decoder)\.decode\((new Uint(?:8|16)Array\(memory\d+\.buffer, ptr\d+, len\d+\))\)/g;
const COPIES = /\bmemory\d+\.buffer\.slice\(/g;
const COPY_SLICE = /\b(memory\d+)\.buffer\.slice\((ptr\d+), \2 \+ (len\d+) \* (\d+)\)/g;

/** Handles a component instance may hold at once, over all its tables: streams, descriptors, pollables, its own resources. */
export const MAX_LIVE_HANDLES = 65536;

/** What the glue throws when a component would hold more than MAX_LIVE_HANDLES (outcome.ts classifies it). */
export function isHandleLimit(err: unknown): boolean {
  return err instanceof RangeError && (err as { corralLimit?: unknown }).corralLimit === 'handles';
}

/** The first line of `instantiate`'s body: what is declared after it is state of one instance. */
const INSTANCE_TOP = /^export function instantiate\([^\n]*\{\n/m;

/** Declare `declaration` at the top of `instantiate`, so that each instance (each call) has its own. */
function perInstance(glue: string, declaration: string): string | undefined {
  const declared = glue.replace(INSTANCE_TOP, (line) => `${line}  ${declaration}\n`);
  return declared === glue ? undefined : declared;
}

/**
 * jco's rscTableRemove takes the guest's handle unchecked: one past the
 * table's end read as an empty slot, was written, and went on the free list.
 * Dropping handles 1000, 1001, … grew the table without bound (V8 then killed
 * the whole process: "invalid size error"), and a slot freed that way was
 * taken again without being counted. And rscTableCreateBorrow takes the next
 * free slot from the wrong index (`table[free]`, not `table[free << 1]`).
 */
const TABLE_REMOVE = /function rscTableRemove \(table, handle\) \{/g;
const BORROW_FREE_LIST = /(function rscTableCreateBorrow \(table, rep\) \{[^}]*?\n\s*\}\n\s*)table\[0\] = table\[free\];/g;

/** Where jco's glue adds a slot: its handle tables (rscTableCreateOwn/Borrow), and the RepTable of the async built-ins' state. */
const SLOT_MAKERS = /function rscTableCreate(?:Own|Borrow) \(|^[ \t]*insert\(val\) \{$/gm;
const SLOT_GROWS = [
  /(function rscTableCreate(?:Own|Borrow) \(table, rep\) \{\n\s*const free = table\[0\] & ~T_FLAG;\n\s*if \(free === 0\) \{)/g,
  /(^[ \t]*insert\(val\) \{\n(?:[ \t]*(?:false && )?_debugLog\([^\n]*\n)?\s*const freeIdx = this\.#data\[0\];\n\s*if \(freeIdx === 0\) \{)/gm,
];

/**
 * Bound the handles a component holds. jco's glue keeps them in JS arrays
 * (slots, reused once dropped) beside a Map of host objects, all growing
 * in one piece as they double; a tool that never drops a stream grew them
 * until its worker reached its heap limit, and whether that ended the
 * worker or aborted the whole host (a doubling past the 16 MB Node grants
 * over the limit, nodejs/node#47224) depended on timing. Each new slot,
 * over all of an instance's tables and the RepTables behind the async
 * built-ins (refused anyway, refuseAsyncBuiltins), now counts against
 * MAX_LIVE_HANDLES, so the largest piece stays ~2 MB; past
 * it the call traps (a handle the tool dropped frees its slot for the
 * next). Unlike the rewrites above this one is required: a glue with
 * tables of another shape is refused.
 */
export function capHandleTables(glue: string, toolName = 'component'): string {
  const makers = glue.match(SLOT_MAKERS)?.length ?? 0;
  if (makers === 0) return glue;
  const counter = '__corralHandleSlots';
  let guarded = 0;
  let capped = perInstance(glue.replace(BORROW_FREE_LIST, '$1table[0] = table[free << 1];'), `let ${counter} = 0;`);
  for (const grows of SLOT_GROWS) {
    capped = capped?.replace(grows, (head: string) => {
      guarded++;
      return `${head} if (++${counter} > ${MAX_LIVE_HANDLES}) throw Object.assign(new RangeError('more than ${MAX_LIVE_HANDLES} live handles'), { corralLimit: 'handles' });`;
    });
  }
  const removers = glue.match(TABLE_REMOVE)?.length ?? 0;
  let checked = 0;
  capped = capped?.replace(TABLE_REMOVE, (head: string) => {
    checked++;
    return `${head} if (!(Number.isInteger(handle) && handle > 0 && handle * 2 + 1 < table.length)) throw new TypeError('Invalid handle');`;
  });
  if (capped === undefined || guarded !== makers || checked !== removers) {
    throw new CorralError(ErrorCodes.REGISTRATION, `${toolName}'s glue keeps handles in tables of a shape Corral cannot bound.`, {
      reason: 'unbounded_handle_tables',
    });
  }
  return capped;
}

/** Why a call into the host made while another is under way traps. */
const REENTERED = 'a call into the host while the host was still answering another (from cabi_realloc): the component model forbids it';

/** The key of the imports object under which a host learns of the first error that left a host call (never a WIT interface name). */
export const TRAP_IMPORT = 'corral:runtime/trap';

/** jco's trampolines: every call from a core module into the host goes through one, a function or a binding. */
const TRAMPOLINES = /^([ \t]*)(?:(?:async )?function (trampoline\d+)\(|const (trampoline\d+) = )/gm;
/** A built-in jco binds straight to a trampoline: what it binds. */
const BOUND_TRAMPOLINE = /^([ \t]*)const (trampoline\d+) = ([^\n]*)$/gm;
/** resource.new of a resource the component defines: the one bound built-in of WASI 0.2's synchronous component model. */
const RESOURCE_NEW = /^rscTableCreateOwn\.bind\(null, (handleTable\d+)\);$/;

/**
 * Refuse the component model's async built-ins (waitable sets, streams,
 * futures, error contexts, task and context intrinsics, async-lowered
 * imports), which jco binds straight to a trampoline, as it binds the
 * transfer of resources between nested components; resource.new, the
 * one such built-in a synchronous component has, becomes a function
 * trampoline like the rest, so that trapsEndTheInstance guards it. Corral
 * runs WASI 0.2 commands. jco 1.15.4's async support is partial (stream.new
 * always throws; an async-lowered import's glue does not parse), and its
 * state for them lives outside any table Corral bounds: error-context.new,
 * with no import, filled a worker's 1 GB heap in 5 s.
 */
export function refuseAsyncBuiltins(glue: string, toolName = 'component'): string {
  const refused = new Set<string>();
  const rewritten = glue.replace(BOUND_TRAMPOLINE, (line, indent: string, name: string, bound: string) => {
    const table = RESOURCE_NEW.exec(bound)?.[1];
    if (table === undefined) {
      refused.add(/^(?:new )?([\w$.]+?)(?:\.bind)?[(;]/.exec(bound)?.[1] ?? bound.slice(0, 40));
      return line;
    }
    return `${indent}function ${name}(rep) {\n${indent}  return rscTableCreateOwn(${table}, rep);\n${indent}}`;
  });
  if (refused.size > 0) {
    throw new CorralError(
      ErrorCodes.REGISTRATION,
      `${toolName} uses built-ins of the component model that Corral does not run (${[...refused].join(', ')}): the async ABI (waitable sets, streams, futures, error contexts, async imports), or resources passed between the components nested in it.`,
      { reason: 'unsupported_builtins', builtins: [...refused] },
    );
  }
  return rewritten;
}
const TRAMPOLINE_BODIES = /^([ \t]*)(async )?function (trampoline\d+)\(([^)\n]*)\) \{\n([\s\S]*?)\n\1\}$/gm;

/**
 * A trap in a call into the host ends the instance, as in the component
 * model, where a trap cannot be caught. In JS it is an exception, and wasm
 * exception handling (try_table and catch_all, in Deno and Chromium) can
 * catch it and call the host again, with the glue's state left as the
 * exception found it: a handle past the cap left its host object in a Map
 * no table refers to, and a refused argument left a borrow list that is
 * never reset, one entry more each time. Each trampoline now records the
 * first error that leaves it (and tells the host, under TRAP_IMPORT, so the
 * call fails with it even if the tool carries on) and throws it again
 * before doing anything once one has. A call into the host made while
 * another is under way traps too: the glue lowers a result through the
 * guest's cabi_realloc, which could call the host again (the component
 * model forbids it, jco does not check), each level holding a buffer as
 * large as the memory limit (random bytes: 2.27 GB of RSS four levels
 * down, from 64 KiB of wasm memory). Required, as the handle cap is.
 */
export function trapsEndTheInstance(glue: string, toolName = 'component'): string {
  const trampolines = glue.match(TRAMPOLINES)?.length ?? 0;
  if (trampolines === 0) return glue;
  const trap = '__corralTrap';
  const inHost = '__corralInHost';
  const record = `if (${trap} === undefined) { ${trap} = { error }; imports['${TRAP_IMPORT}']?.trapped(error); }`;
  let wrapped = 0;
  const guarded = perInstance(glue, `let ${trap}, ${inHost} = false;`)?.replace(
    TRAMPOLINE_BODIES,
    (_fn, indent: string, async: string | undefined, name: string, params: string, body: string) => {
      wrapped++;
      return [
        `${indent}${async ?? ''}function ${name}(${params}) {`,
        `${indent}  if (${trap} !== undefined) throw ${trap}.error;`,
        `${indent}  if (${inHost}) { const error = new TypeError('${REENTERED}'); ${record} throw error; }`,
        `${indent}  ${inHost} = true;`,
        `${indent}  try {`,
        body,
        `${indent}  } catch (error) {`,
        `${indent}    ${record}`,
        `${indent}    throw error;`,
        `${indent}  } finally {`,
        `${indent}    ${inHost} = false;`,
        `${indent}  }`,
        `${indent}}`,
      ].join('\n');
    },
  );
  if (guarded === undefined || wrapped !== trampolines) {
    throw new CorralError(ErrorCodes.REGISTRATION, `${toolName}'s glue calls the host in a shape Corral cannot guard.`, {
      reason: 'unguarded_host_calls',
    });
  }
  return guarded;
}
