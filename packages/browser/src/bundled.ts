/**
 * The first-party tools (the @corral/tools package, `wasm-tools/` in the
 * repository): their specs, and the URLs of their .wasm files for a page to
 * fetch. The URLs come from @corral/tools, where they are
 * `new URL('./…', import.meta.url)` literals, so bundlers (Vite, webpack)
 * copy the files into the build and rewrite the URLs.
 */
import { CorralError, ErrorCodes, type Tool } from '@corral/core';
import { decodePreparedFile } from '@corral/wasi/host-kit';
import { toolFiles } from '@corral/tools';
import { BUNDLED_SPECS } from './bundled-specs.js';
import type { BrowserCorral } from './corral.js';

export interface BundledTool {
  name: string;
  /** The tool-spec.json, as shipped. */
  spec: object;
  /** The tool's component (what Node runs too). */
  wasmUrl: string;
  /** The same tool built as a WASI preview1 module: runs without jco's transpile, so a first call is fast. */
  moduleUrl: string;
  /** The component as jco transpiled it when Corral was built: a page runs it without loading jco. */
  preparedUrl: string;
}

function spec(name: string): object {
  const found = BUNDLED_SPECS[name];
  if (!found) throw new Error(`bundled-specs.ts has no ${name}: run node packages/browser/scripts/bundled-specs.mjs`);
  return found;
}

export const bundledTools: BundledTool[] = toolFiles.map((files) => ({
  name: files.name,
  spec: spec(files.name),
  wasmUrl: files.wasmUrl,
  moduleUrl: files.moduleUrl,
  preparedUrl: files.preparedUrl,
}));

export interface RegisterBundledOptions {
  /**
   * 'component' (default) registers the components Node runs; 'module'
   * registers the preview1 builds of the same tools, which skip jco's
   * transpile (one flavour per registry: both share name and version).
   */
  kind?: 'component' | 'module';
  /**
   * Fetches the .wasm files and the components' transpiled forms, whose
   * JavaScript the sandbox workers run: give a fetch you trust as you trust
   * the page's own scripts. Default: the global fetch.
   */
  fetch?: (url: string) => Promise<Response>;
}

/** Fetch and register every bundled tool. Throws E_REGISTRATION when a file cannot be fetched. */
export async function registerBundledTools(corral: BrowserCorral, options: RegisterBundledOptions = {}): Promise<Tool[]> {
  const kind = options.kind ?? 'component';
  const get = options.fetch ?? ((url: string) => fetch(url));
  return Promise.all(
    bundledTools.map(async (tool) => {
      const url = kind === 'module' ? tool.moduleUrl : tool.wasmUrl;
      let bytes: Uint8Array;
      try {
        const response = await get(url);
        if (!response.ok) throw new Error(`HTTP ${response.status}`);
        bytes = new Uint8Array(await response.arrayBuffer());
      } catch (err) {
        const reason = err instanceof Error ? err.message : String(err);
        throw new CorralError(ErrorCodes.REGISTRATION, `Could not fetch the bundled tool ${tool.name} from ${url}: ${reason}`, {
          name: tool.name,
          url,
          reason,
        });
      }
      const spec = kind === 'module' ? { ...tool.spec, component: `${tool.name}.module.wasm`, kind: 'module' } : tool.spec;
      const registered = await corral.register(spec, bytes, `bundled ${tool.name}`);
      // Fetched at the tool's first call, not now; a missing or stale file means jco transpiles as before.
      if (kind === 'component') {
        const sha256 = registered.wasmSha256;
        corral.executor.addPrebuilt(sha256, async () => {
          const response = await get(tool.preparedUrl);
          return response.ok ? decodePreparedFile(await response.text(), sha256) : undefined;
        });
      }
      return registered;
    }),
  );
}
