/**
 * The imports a component declares, read from its binary.
 *
 * Policy cannot rest on jco's transpile result: jco lists only the imports
 * the component *uses*, so a world that imports `wasi:http/outgoing-handler`
 * and never calls it would pass, and an import Corral does not implement
 * would reach the glue's `imports[name]` lookup (an import named
 * `constructor` found `Object`). This file reads the component's own
 * top-level import section instead, before jco sees the bytes, and refuses
 * every import that is not on a short allow-list.
 *
 * Grammar quoted from the component model's design/mvp/Binary.md (binary
 * version 0x0d). Only the top level is read: a nested component's imports
 * are satisfied by its parent, never by the host, and core modules inside
 * import from other core instances. Everything else is stepped over by its
 * section size. Every length is checked against the bytes that remain, so a
 * malformed file ends in E_REGISTRATION, never a hang or a huge allocation.
 */
import { CorralError, ErrorCodes } from '@corral/core/errors';
import { MalformedWasm as Malformed, WasmReader as Reader } from '@corral/core/wasm';

/**
 * The interfaces Corral's component host provides (version-less; any 0.2.x
 * version is accepted). Everything else a component imports is refused at
 * load: it would otherwise be looked up by name in the import object.
 */
export const PROVIDED_INTERFACES: readonly string[] = Object.freeze([
  'wasi:cli/environment',
  'wasi:cli/exit',
  'wasi:cli/stdin',
  'wasi:cli/stdout',
  'wasi:cli/stderr',
  'wasi:cli/terminal-input',
  'wasi:cli/terminal-output',
  'wasi:cli/terminal-stdin',
  'wasi:cli/terminal-stdout',
  'wasi:cli/terminal-stderr',
  'wasi:clocks/monotonic-clock',
  'wasi:clocks/wall-clock',
  'wasi:filesystem/types',
  'wasi:filesystem/preopens',
  'wasi:io/error',
  'wasi:io/poll',
  'wasi:io/streams',
  'wasi:random/random',
  'wasi:random/insecure',
  'wasi:random/insecure-seed',
]);

const PROVIDED = new Set(PROVIDED_INTERFACES);

/** Interfaces that reach the network; a component importing one is refused, whatever the version. */
const NETWORK = /^wasi:(sockets|http)\//;

/** The WASI release Corral implements: 0.2, any patch (`0.2` alone is a canonical version, 🔗 in Binary.md). */
const PROVIDED_VERSION = /^0\.2(\.\d+)?$/;

// preamble ::= magic version layer: "\0asm", then 0x0d 0x00 (binary version 13), then 0x01 0x00 (component layer).
const PREAMBLE = [0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];
const SECTION_IMPORT = 10;

/**
 * Every import a component declares at its top level, as written in the
 * binary, e.g. `wasi:cli/stdin@0.2.0` (a 🔗 version suffix is appended:
 * `wasi:cli/stdin@0.2` with suffix `.3` reads `wasi:cli/stdin@0.2.3`).
 * Throws E_REGISTRATION when the bytes are not a component this parser
 * understands.
 */
export function declaredImports(bytes: Uint8Array, toolName = 'component'): string[] {
  try {
    return readImports(bytes);
  } catch (err) {
    if (!(err instanceof Malformed)) throw err;
    throw new CorralError(ErrorCodes.REGISTRATION, `${toolName} is not a valid WebAssembly component: ${err.message}.`, {
      reason: err.message,
    });
  }
}

function readImports(bytes: Uint8Array): string[] {
  if (bytes.length < PREAMBLE.length || PREAMBLE.some((b, i) => bytes[i] !== b)) {
    throw new Malformed('it does not start with the component preamble (\\0asm, version 0x0d, layer 1)', 0);
  }
  const names: string[] = [];
  const file = new Reader(bytes, PREAMBLE.length, bytes.length);
  // section ::= id:byte size:u32 body:byte^size; one import section or several, anywhere.
  while (file.pos < file.end) {
    const id = file.byte();
    const size = file.u32();
    if (size > file.end - file.pos) throw new Malformed(`section ${id} claims ${size} bytes; ${file.end - file.pos} remain`, file.pos);
    const bodyEnd = file.pos + size;
    if (id === SECTION_IMPORT) {
      const section = new Reader(bytes, file.pos, bodyEnd);
      // section_10(vec(<import>))
      for (let count = section.u32(); count > 0; count--) names.push(readImport(section));
      if (section.pos !== bodyEnd) throw new Malformed('the import section has bytes after its last import', section.pos);
    }
    file.pos = bodyEnd;
  }
  return names;
}

/** import ::= na:<nameattributes> et:<externtype> */
function readImport(r: Reader): string {
  // nameattributes ::= 0x00 len:<u32> en:<externname>
  //                  | 0x01 len:<u32> en:<externname>       (the same; older encoders wrote 0x01 for interface names)
  //                  | 0x02 len:<u32> en:<externname> a*:vec(<attribute>)
  const at = r.pos;
  const form = r.byte();
  if (form > 0x02) throw new Malformed(`unknown import name form 0x${form.toString(16)}`, at);
  let name = r.name();
  if (form === 0x02) {
    // attribute ::= 0x00 len:<u32> in:<interfacename>   (implements: the import stays named by its plain name)
    //             | 0x01 len:<u32> vs:<semversuffix>    (versionsuffix: completes a canonical version)
    //             | 0x02 n:<name>                       (external-id)
    for (let count = r.u32(); count > 0; count--) {
      const kind = r.byte();
      if (kind > 0x02) throw new Malformed(`unknown import attribute 0x${kind.toString(16)}`, r.pos - 1);
      const value = r.name();
      if (kind === 0x01) name += value;
    }
  }
  skipExternType(r);
  return name;
}

/**
 * externtype ::= 0x00 0x11 i:<core:typeidx>   (core module)
 *              | 0x01 i:<typeidx>             (func)
 *              | 0x02 b:<valuebound>          (value 🪙)
 *              | 0x03 b:<typebound>           (type)
 *              | 0x04 i:<typeidx>             (component)
 *              | 0x05 i:<typeidx>             (instance)
 * typebound  ::= 0x00 i:<typeidx> | 0x01      (eq i | sub resource)
 * valuebound ::= 0x00 i:<valueidx> | 0x01 t:<valtype>
 */
function skipExternType(r: Reader): void {
  const at = r.pos;
  const kind = r.byte();
  switch (kind) {
    case 0x00:
      if (r.byte() !== 0x11) throw new Malformed('a core import that is not a module', at);
      r.u32();
      return;
    case 0x01:
    case 0x04:
    case 0x05:
      r.u32();
      return;
    case 0x02:
      if (r.byte() === 0x00) r.u32();
      else r.skipLeb(5);
      return;
    case 0x03:
      if (r.byte() === 0x00) r.u32();
      return;
    default:
      throw new Malformed(`unknown import kind 0x${kind.toString(16)}`, at);
  }
}

/** `wasi:cli/stdin@0.2.0` → `wasi:cli/stdin`. */
function withoutVersion(name: string): string {
  const at = name.indexOf('@');
  return at === -1 ? name : name.slice(0, at);
}

/** Why Corral does not provide `name`, or undefined when it does. */
function notProvided(name: string): string | undefined {
  const at = name.indexOf('@');
  const iface = withoutVersion(name);
  if (!PROVIDED.has(iface)) return name;
  const version = at === -1 ? undefined : name.slice(at + 1);
  if (version === undefined) return `${name} (no version; Corral provides 0.2.x)`;
  if (!PROVIDED_VERSION.test(version)) return `${name} (version ${version}; Corral provides 0.2.x)`;
  return undefined;
}

/**
 * Refuse a component whose declared imports Corral does not provide:
 * E_NETWORK_BLOCKED for any wasi:sockets or wasi:http interface (any
 * version), E_REGISTRATION naming every other import outside
 * PROVIDED_INTERFACES 0.2.x. Takes the component's bytes, or the names
 * `declaredImports` read from them (a cached PreparedComponent's).
 * Returns the declared names.
 */
export function checkComponentImports(source: Uint8Array | readonly string[], toolName: string): string[] {
  const names = source instanceof Uint8Array ? declaredImports(source, toolName) : [...source];
  if (names.some((name) => typeof name !== 'string')) {
    throw new CorralError(ErrorCodes.REGISTRATION, `${toolName}: the prepared component's import list is damaged; clear the cache.`);
  }
  const network = names.filter((name) => NETWORK.test(name));
  if (network.length > 0) {
    throw new CorralError(
      ErrorCodes.NETWORK_BLOCKED,
      `${toolName} imports ${network.join(', ')}; Corral tools run without network access.`,
      { imports: [...new Set(network.map(withoutVersion))] },
    );
  }
  const refused = names.map(notProvided).filter((why): why is string => why !== undefined);
  if (refused.length > 0) {
    throw new CorralError(
      ErrorCodes.REGISTRATION,
      `${toolName} imports ${refused.join(', ')}, which Corral does not provide; a Corral tool may import only ` +
        `${summarize(PROVIDED_INTERFACES)} of WASI 0.2.`,
      { imports: names.filter((name) => notProvided(name) !== undefined), provided: [...PROVIDED_INTERFACES] },
    );
  }
  return names;
}

/** ['wasi:io/error', 'wasi:io/poll'] → 'wasi:io/{error,poll}'. */
function summarize(interfaces: readonly string[]): string {
  const byPackage = new Map<string, string[]>();
  for (const iface of interfaces) {
    const [pkg, name] = iface.split('/') as [string, string];
    byPackage.set(pkg, [...(byPackage.get(pkg) ?? []), name]);
  }
  return [...byPackage].map(([pkg, names]) => `${pkg}/{${names.join(',')}}`).join(', ');
}
