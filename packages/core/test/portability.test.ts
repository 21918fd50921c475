/**
 * core and wasi must run in browsers, Web Workers and Node: no Node builtins,
 * no DOM globals. This scans their sources and prints file:line of each offence.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../../..');
const SCANNED = ['packages/core/src', 'packages/wasi/src'];
const BUILTINS = new Set(builtinModules.map((m) => m.replace(/^node:/, '')));
const DOM_GLOBALS = ['document', 'window', 'localStorage'];

/**
 * Blank comments (keeping newlines, so line numbers hold). `keepStrings`
 * false also blanks string contents, so prose in messages is not mistaken
 * for code. Template literals are treated as one string.
 */
export function blank(source: string, keepStrings: boolean): string {
  let out = '';
  let i = 0;
  const spaces = (s: string) => s.replace(/[^\n]/g, ' ');
  while (i < source.length) {
    const c = source[i]!;
    const next = source[i + 1];
    let end: number;
    if (c === '/' && next === '/') {
      end = source.indexOf('\n', i);
      end = end < 0 ? source.length : end;
      out += spaces(source.slice(i, end));
    } else if (c === '/' && next === '*') {
      end = source.indexOf('*/', i + 2);
      end = end < 0 ? source.length : end + 2;
      out += spaces(source.slice(i, end));
    } else if (c === '"' || c === "'" || c === '`') {
      end = i + 1;
      while (end < source.length && source[end] !== c) end += source[end] === '\\' ? 2 : 1;
      end = Math.min(end + 1, source.length);
      const text = source.slice(i, end);
      out += keepStrings ? text : c + spaces(text.slice(1, -1)) + c;
    } else {
      end = i + 1;
      out += c;
    }
    i = end;
  }
  return out;
}

const IMPORT = /(?:\bfrom\s*|\bimport\s*\(?\s*|\brequire\s*\(\s*)(['"])([^'"]+)\1/g;
const DOM = new RegExp(`(?<![\\w$.])(?:(?:globalThis|self)\\.)?(${DOM_GLOBALS.join('|')})\\b(?!\\s*:)`, 'g');
const DOM_VIA_GLOBAL = new RegExp(`\\b(?:globalThis|self)\\.(${DOM_GLOBALS.join('|')})\\b`, 'g');

/** Offences in one file's source, as "line: what". */
export function offences(source: string): string[] {
  const found: string[] = [];
  const lineOf = (text: string, index: number) => text.slice(0, index).split('\n').length;
  const code = blank(source, true);
  for (const m of code.matchAll(IMPORT)) {
    const spec = m[2]!;
    const bare = spec.replace(/^node:/, '');
    if (spec.startsWith('node:') || BUILTINS.has(bare) || BUILTINS.has(bare.split('/')[0]!)) {
      found.push(`${lineOf(code, m.index)}: imports Node builtin '${spec}'`);
    }
  }
  const noStrings = blank(source, false);
  for (const re of [DOM, DOM_VIA_GLOBAL]) {
    for (const m of noStrings.matchAll(re)) found.push(`${lineOf(noStrings, m.index)}: uses DOM global '${m[1]}'`);
  }
  return [...new Set(found)];
}

function tsFiles(dir: string): string[] {
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return []; // a package that has no src yet
  }
  return entries.flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return tsFiles(path);
    return /\.(c|m)?ts$/.test(name) ? [path] : [];
  });
}

describe('portability of core and wasi', () => {
  it('imports no Node builtins and touches no DOM globals', () => {
    const files = SCANNED.flatMap((dir) => tsFiles(join(ROOT, dir)));
    expect(files.length).toBeGreaterThan(0);
    const report = files.flatMap((file) =>
      offences(readFileSync(file, 'utf8')).map((o) => `${relative(ROOT, file)}:${o}`),
    );
    // On failure the diff prints each offending file:line.
    expect(report).toEqual([]);
  });

  it('the scanner catches what it should and ignores comments and strings', () => {
    const bad = [
      "import { readFile } from 'node:fs/promises';",
      "import path from 'path';",
      "const w = await import('worker_threads');",
      "export * from 'fs/promises';",
      'const el = document.body;',
      'globalThis.localStorage.setItem("a", "b");',
      'if (typeof window !== "undefined") {}',
    ].join('\n');
    expect(offences(bad)).toEqual([
      "1: imports Node builtin 'node:fs/promises'",
      "2: imports Node builtin 'path'",
      "3: imports Node builtin 'worker_threads'",
      "4: imports Node builtin 'fs/promises'",
      "5: uses DOM global 'document'",
      "6: uses DOM global 'localStorage'",
      "7: uses DOM global 'window'",
    ]);
    const fine = [
      '// the window of time; import fs from "fs"',
      "/* document */ const message = 'open the window';",
      "import { Ajv } from 'ajv';",
      'const o = { window: 1 }; o.window; const documentation = 2;',
      "const url = 'https://example.com/path';",
    ].join('\n');
    expect(offences(fine)).toEqual([]);
  });
});
