/**
 * What each published package.json promises, checked without packing
 * (pack.test.ts installs the tarballs): the fields a registry page and a
 * package manager read, exact dependency versions, every package a built
 * file imports declared as a dependency (a hoisting workspace hides a
 * missing one), and @corral/tools listing every tool folder it ships.
 */
import { describe, expect, it } from 'vitest';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BUNDLED_TOOLS_DIR } from '@corral/node';
import { toolFiles } from '@corral/tools';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const root = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { workspaces: string[] };

interface Manifest {
  name: string;
  version: string;
  private?: boolean;
  description?: string;
  license?: string;
  type?: string;
  engines?: Record<string, string>;
  files?: string[];
  exports?: Record<string, unknown>;
  imports?: Record<string, unknown>;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}

const workspaces = root.workspaces.map((dir) => ({
  dir,
  manifest: JSON.parse(readFileSync(join(ROOT, dir, 'package.json'), 'utf8')) as Manifest,
}));
const published = workspaces.filter((w) => !w.manifest.private);
const versions = new Map(workspaces.map((w) => [w.manifest.name, w.manifest.version]));

/** Bare specifiers imported by the .js and .d.ts files under `dir`, by package name. */
function importedPackages(dir: string): Map<string, string> {
  const found = new Map<string, string>();
  const walk = (d: string) => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      const path = join(d, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (/\.(js|d\.ts)$/.test(entry.name)) {
        const text = readFileSync(path, 'utf8');
        const statements =
          /^\s*(?:import|export)\b[^;'"]*?\bfrom\s*['"]([^'"]+)['"]|^\s*import\s*['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/gm;
        for (const m of text.matchAll(statements)) {
          const specifier = (m[1] ?? m[2] ?? m[3])!;
          // A scheme (node:, or wasi: in the JS tool wrapper `corral build` writes) is not a package.
          if (specifier.startsWith('.') || /^[a-z][a-z0-9+.-]*:/.test(specifier) || builtinModules.includes(specifier)) continue;
          const name = specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0]!;
          if (!found.has(name)) found.set(name, path.slice(ROOT.length));
        }
      }
    }
  };
  walk(dir);
  return found;
}

describe('the published package.json files', () => {
  it('are all there: the tools package and the libraries; apps/web stays private', () => {
    expect(published.map((w) => w.manifest.name).sort()).toEqual([
      '@corral/ai-sdk',
      '@corral/browser',
      '@corral/core',
      '@corral/fleet',
      '@corral/langchain',
      '@corral/mcp',
      '@corral/node',
      '@corral/postgres',
      '@corral/tools',
      '@corral/wasi',
      '@corral/workflow',
    ]);
    expect(workspaces.find((w) => w.dir === 'apps/web')?.manifest.private).toBe(true);
  });

  for (const { dir, manifest } of published) {
    it(`${manifest.name}: describes itself, and pins what it depends on`, () => {
      expect(manifest.description, 'description').toMatch(/\w{3,}/);
      expect(manifest.license).toBe('Apache-2.0');
      expect(manifest.type).toBe('module');
      expect(manifest.engines).toEqual({ node: '>=20' });
      expect(manifest.files?.length, 'files').toBeGreaterThan(0);
      expect(manifest.exports?.['.'], 'exports["."]').toBeDefined();
      for (const [name, range] of Object.entries(manifest.dependencies ?? {})) {
        expect(range, `${name}: an exact version`).toMatch(/^\d+\.\d+\.\d+$/);
        if (versions.has(name)) expect(range, `${name}: the workspace's version`).toBe(versions.get(name));
      }
    });

    if (existsSync(join(ROOT, dir, 'dist'))) {
      it(`${manifest.name}: every package its built files import is a dependency`, () => {
        const declared = new Set([...Object.keys(manifest.dependencies ?? {}), ...Object.keys(manifest.peerDependencies ?? {})]);
        // `#name`: the package's own conditional imports, declared in its "imports" field instead.
        const imports = manifest.imports ?? {};
        const undeclared = [...importedPackages(join(ROOT, dir, 'dist'))].filter(([name]) =>
          name.startsWith('#') ? !Object.hasOwn(imports, name) : !declared.has(name) && name !== manifest.name,
        );
        expect(undeclared.map(([name, file]) => `${name} (imported by ${file})`)).toEqual([]);
        // Every file an "imports" condition names is built, and published (under dist/).
        const targets = Object.values(imports).flatMap((target) =>
          typeof target === 'string' ? [target] : Object.values(target as object),
        );
        for (const target of targets as string[]) {
          expect(target, 'an "imports" target').toMatch(/^\.\/dist\//);
          expect(existsSync(join(ROOT, dir, target)), `${manifest.name} "imports" target ${target}`).toBe(true);
        }
      });
    }
  }
});

describe('@corral/tools', () => {
  it('lists every tool folder, and each URL is a file of the package', () => {
    const folders = readdirSync(join(ROOT, 'wasm-tools'), { withFileTypes: true })
      .filter((e) => e.isDirectory() && existsSync(join(ROOT, 'wasm-tools', e.name, 'tool-spec.json')))
      .map((e) => e.name)
      .sort();
    expect(toolFiles.map((t) => t.name)).toEqual(folders);
    for (const tool of toolFiles) {
      const spec = JSON.parse(readFileSync(join(ROOT, 'wasm-tools', tool.name, 'tool-spec.json'), 'utf8')) as {
        name: string;
        component: string;
      };
      expect(spec.name).toBe(tool.name);
      expect(fileURLToPath(tool.wasmUrl)).toBe(join(ROOT, 'wasm-tools', tool.name, spec.component));
      expect(existsSync(fileURLToPath(tool.moduleUrl)), tool.moduleUrl).toBe(true);
    }
  });

  it('is where @corral/node looks for the bundled tools', () => {
    expect(BUNDLED_TOOLS_DIR).toBe(join(ROOT, 'wasm-tools/'));
  });
});
