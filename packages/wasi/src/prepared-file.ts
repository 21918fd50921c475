/**
 * A transpiled component as a file: what the build writes for each bundled
 * component (wasm-tools/prepare-components.mjs, `<tool>.prepared.json`) so
 * that no host runs jco for the tools Corral ships. JSON, with the core
 * modules in base64, so a page fetches one file per tool and Node reads one.
 *
 * The glue is JavaScript that runs in the sandbox worker: hosts read these
 * files only from Corral's own installed tools, never from a tool folder.
 */
import { PREPARED_FORMAT } from './prepared-format.js';
import type { PreparedComponent } from './transpile.js';

interface PreparedFile {
  format: string;
  /** SHA-256 of the component it was made from. */
  sha256: string;
  glue: string;
  imports: string[];
  /** Core module name → its bytes in base64. */
  modules: Record<string, string>;
  /** PreparedComponent.preview1 in base64, when the component is an adapted preview1 module. */
  preview1?: string;
}

/** The file's text for `prepared`, made from the component whose SHA-256 is `sha256`. */
export function encodePreparedFile(sha256: string, prepared: PreparedComponent): string {
  const modules = Object.fromEntries(Object.entries(prepared.modules).map(([name, bytes]) => [name, toBase64(bytes)]));
  const file: PreparedFile = {
    format: PREPARED_FORMAT,
    sha256,
    glue: prepared.glue,
    imports: prepared.imports,
    modules,
    ...(prepared.preview1 ? { preview1: toBase64(prepared.preview1) } : {}),
  };
  return JSON.stringify(file);
}

/**
 * The component in a file's text, or undefined when it was made by another
 * transpiler or layout, from another component, or is not such a file at
 * all: the host then transpiles as usual.
 */
export function decodePreparedFile(text: string, sha256: string): PreparedComponent | undefined {
  let file: Partial<PreparedFile>;
  try {
    file = JSON.parse(text) as Partial<PreparedFile>;
  } catch {
    return undefined;
  }
  if (file?.format !== PREPARED_FORMAT || file.sha256 !== sha256 || typeof file.glue !== 'string') return undefined;
  if (!Array.isArray(file.imports) || !file.imports.every((name) => typeof name === 'string')) return undefined;
  if (typeof file.modules !== 'object' || file.modules === null) return undefined;
  const decoded = Object.entries(file.modules).map(([name, base64]) => [name, typeof base64 === 'string' ? fromBase64(base64) : undefined]);
  if (decoded.some(([, bytes]) => bytes === undefined)) return undefined;
  const preview1 = typeof file.preview1 === 'string' ? fromBase64(file.preview1) : undefined;
  if (file.preview1 !== undefined && preview1 === undefined) return undefined;
  // fromEntries: a module named __proto__ stays a module.
  return {
    glue: file.glue,
    imports: file.imports,
    modules: Object.fromEntries(decoded) as Record<string, Uint8Array>,
    ...(preview1 ? { preview1 } : {}),
  };
}

function toBase64(bytes: Uint8Array): string {
  let binary = '';
  for (let at = 0; at < bytes.length; at += 0x8000) binary += String.fromCharCode(...bytes.subarray(at, at + 0x8000));
  return btoa(binary);
}

/**
 * The bytes whole, padded base64 of this length holds, or -1 for a length
 * it cannot have. A decoder that skips what it cannot read (Buffer skips
 * any other character and stops at an inner `=`) returns fewer bytes for a
 * damaged text, so comparing lengths refuses it: as strict as a pattern
 * over the text, which cost ~8 ms of a bundled tool's first call.
 */
function decodedLength(base64: string): number {
  if (base64.length % 4 !== 0) return -1;
  const padding = base64.endsWith('==') ? 2 : base64.endsWith('=') ? 1 : 0;
  return (base64.length / 4) * 3 - padding;
}

/** Decoders the platform may have: Uint8Array.fromBase64 (newer engines), Node's Buffer. */
const platform = globalThis as {
  Uint8Array: { fromBase64?: (text: string) => Uint8Array };
  Buffer?: { from(text: string, encoding: 'base64'): Uint8Array };
};

/**
 * The bytes of whole, padded base64, or undefined when it is not that.
 * Natively where the platform can: decoding the bytes one by one from atob's
 * string took ~2 ms of a bundled tool's first call in Node, on the caller's thread.
 */
function fromBase64(base64: string): Uint8Array | undefined {
  const length = decodedLength(base64);
  if (length < 0) return undefined;
  let bytes: Uint8Array;
  try {
    bytes = decodeBase64(base64);
  } catch {
    return undefined; // fromBase64 and atob throw on what they cannot read
  }
  return bytes.length === length ? bytes : undefined;
}

function decodeBase64(base64: string): Uint8Array {
  if (platform.Uint8Array.fromBase64) return platform.Uint8Array.fromBase64(base64);
  // Copied: a small Buffer is a view of a pool shared with unrelated data, and would be posted whole to a worker.
  if (platform.Buffer) return new Uint8Array(platform.Buffer.from(base64, 'base64'));
  const binary = atob(base64);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}
