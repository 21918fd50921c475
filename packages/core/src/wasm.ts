/** Looking at wasm bytes without compiling them: what kind of binary, and its hash. */
import { CorralError, ErrorCodes } from './errors.js';

export {
  adapterReallocProblem,
  componentCoreModules,
  coreModuleInterface,
  hasStartFunction,
  CABI_REALLOC_HINT,
  type CoreExport,
  type CoreExternKind,
  type CoreImport,
  type CoreModuleInterface,
  type WasmProblem,
} from './wasm-sections.js';
export { MalformedWasm, WasmReader } from './wasm-reader.js';

export type WasmKind = 'component' | 'module';

// Every wasm binary starts with "\0asm" then a 4-byte version/layer word:
// core modules are version 1, layer 0; components (the component model's
// current binary format) are version 0x0d, layer 1.
const MAGIC = [0x00, 0x61, 0x73, 0x6d];
const MODULE_WORD = [0x01, 0x00, 0x00, 0x00];
const COMPONENT_WORD = [0x0d, 0x00, 0x01, 0x00];

const startsWith = (bytes: Uint8Array, at: number, expected: number[]) => expected.every((b, i) => bytes[at + i] === b);

/** 'module' or 'component', or E_REGISTRATION that says what the file looks like instead. */
export function detectWasmKind(bytes: Uint8Array, source = 'bytes'): WasmKind {
  if (bytes.length >= 8 && startsWith(bytes, 0, MAGIC)) {
    if (startsWith(bytes, 4, MODULE_WORD)) return 'module';
    if (startsWith(bytes, 4, COMPONENT_WORD)) return 'component';
    const layer = bytes[6]! | (bytes[7]! << 8);
    const version = bytes[4]! | (bytes[5]! << 8);
    const what = layer === 1 ? 'component' : 'core module';
    throw new CorralError(
      ErrorCodes.REGISTRATION,
      `${source} is a WebAssembly ${what} of binary version ${version}, which Corral does not run ` +
        `(it runs core modules of version 1 and components of version 13); rebuild it with current tools`,
      { source, binary_version: version, layer },
    );
  }
  throw new CorralError(ErrorCodes.REGISTRATION, `${source} is not a WebAssembly file (${describeStart(bytes)})`, {
    source,
    size: bytes.length,
  });
}

/** "it starts with 28 6d 6f 64 … ("(mod")", with a hint for the usual mistakes. */
function describeStart(bytes: Uint8Array): string {
  if (bytes.length === 0) return 'it is empty';
  const head = bytes.subarray(0, 8);
  const hex = Array.from(head, (b) => b.toString(16).padStart(2, '0')).join(' ');
  const text = Array.from(head, (b) => (b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : '.')).join('');
  let hint = '';
  if (startsWith(bytes, 0, MAGIC)) hint = `; only ${bytes.length} bytes, too short for a wasm header`;
  else if (/^\s*\(\s*(module|component)/.test(new TextDecoder().decode(bytes.subarray(0, 64))))
    hint = '; that is WebAssembly text (WAT): compile it to a binary first';
  return `it starts with ${hex} "${text}"${hint}`;
}

const encoder = new TextEncoder();

/**
 * Lower-case hex SHA-256 of bytes or of text (as UTF-8), through WebCrypto so
 * it works in browsers, workers and Node: the one hash Corral keys wasm by
 * and records in snapshots.
 */
export async function sha256Hex(data: Uint8Array | string): Promise<string> {
  const bytes = typeof data === 'string' ? encoder.encode(data) : data;
  const digest = await crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
}
