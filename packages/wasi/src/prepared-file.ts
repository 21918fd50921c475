/**
 * A transpiled component as a file: what the build writes for each bundled
 * component (wasm-tools/prepare-components.mjs, `<tool>.prepared.json`) so
 * that no host runs jco for the tools Corral ships. JSON, with the core
 * modules in base64, so a page fetches one file per tool and Node reads one.
 *
 * The glue is JavaScript that runs in the sandbox worker: hosts read these
 * files only from Corral's own installed tools, never from a tool folder.
 */
import { PREPARED_FORMAT, type PreparedComponent } from './transpile.js';

interface PreparedFile {
  format: string;
  /** SHA-256 of the component it was made from. */
  sha256: string;
  glue: string;
  imports: string[];
  /** Core module name → its bytes in base64. */
  modules: Record<string, string>;
}

/** The file's text for `prepared`, made from the component whose SHA-256 is `sha256`. */
export function encodePreparedFile(sha256: string, prepared: PreparedComponent): string {
  const modules = Object.fromEntries(Object.entries(prepared.modules).map(([name, bytes]) => [name, toBase64(bytes)]));
  const file: PreparedFile = { format: PREPARED_FORMAT, sha256, glue: prepared.glue, imports: prepared.imports, modules };
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
  const entries = Object.entries(file.modules);
  if (!entries.every(([, base64]) => typeof base64 === 'string' && BASE64.test(base64))) return undefined;
  // fromEntries: a module named __proto__ stays a module.
  const modules = Object.fromEntries(entries.map(([name, base64]) => [name, fromBase64(base64 as string)]));
  return { glue: file.glue, imports: file.imports, modules };
}

function toBase64(bytes: Uint8Array): string {
  let binary = '';
  for (let at = 0; at < bytes.length; at += 0x8000) binary += String.fromCharCode(...bytes.subarray(at, at + 0x8000));
  return btoa(binary);
}

/** Whole, padded base64: what atob takes without whitespace, and what Buffer (which skips what it cannot read) decodes alike. */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Decoders the platform may have: Uint8Array.fromBase64 (newer engines), Node's Buffer. */
const platform = globalThis as {
  Uint8Array: { fromBase64?: (text: string) => Uint8Array };
  Buffer?: { from(text: string, encoding: 'base64'): Uint8Array };
};

/**
 * Natively where the platform can: decoding the bytes one by one from atob's
 * string took ~2 ms of a bundled tool's first call in Node, on the caller's thread.
 */
function fromBase64(base64: string): Uint8Array {
  if (platform.Uint8Array.fromBase64) return platform.Uint8Array.fromBase64(base64);
  // Copied: a small Buffer is a view of a pool shared with unrelated data, and would be posted whole to a worker.
  if (platform.Buffer) return new Uint8Array(platform.Buffer.from(base64, 'base64'));
  const binary = atob(base64);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}
