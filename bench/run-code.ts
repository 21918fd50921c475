/**
 * run-code, cold and warm per snippet, against a fresh native process
 * (`node -e`, and `ruby -e` when ruby is installed). Build first:
 * `npm run build && node wasm-tools/run-code/build.mjs`, then
 * `node bench/dist/run-code.js [runs]`.
 *
 * - cold: a fresh Node process creates Corral and makes one call (the
 *   transpiled JS component is in the cache already; its first transpile,
 *   5-30 s, is a one-time cost and is not counted here);
 * - warm: one Corral, one worker, the same snippet again and again;
 * - native: a fresh `node -e CODE` / `ruby -e CODE` process each time.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { Corral } from '@corral/node';
import { fmt, median, quantile, sample, table } from './stats.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TOOL_DIRS = [join(ROOT, 'wasm-tools/run-code/js'), join(ROOT, 'wasm-tools/run-code/ruby')];
const EMPTY = [{ guest: '/workspace', access: 'read' as const, source: { kind: 'memory', tree: {} } }];

interface Snippet {
  language: 'javascript' | 'ruby';
  label: string;
  code: string;
}

const SNIPPETS: Snippet[] = [
  { language: 'javascript', label: 'hello', code: 'console.log("hello")' },
  { language: 'javascript', label: 'fib(25)', code: 'const f = (n) => (n < 2 ? n : f(n - 1) + f(n - 2)); console.log(f(25))' },
  {
    language: 'javascript',
    label: 'JSON 10k',
    code: 'const a = Array.from({ length: 10000 }, (_, i) => ({ i })); console.log(JSON.stringify(a).length)',
  },
  { language: 'ruby', label: 'hello', code: 'puts "hello"' },
  { language: 'ruby', label: 'fib(25)', code: 'def f(n) = n < 2 ? n : f(n - 1) + f(n - 2); puts f(25)' },
  { language: 'ruby', label: 'JSON 10k', code: 'require "json"; puts JSON.generate(Array.new(10000) { |i| { i: i } }).size' },
];

const tool = (language: Snippet['language']) => (language === 'ruby' ? 'run-code-ruby' : 'run-code-js');

// A child run: `--cold LANGUAGE CODE` times Corral.create + one call in this fresh process.
if (process.argv[2] === '--cold') {
  const language = process.argv[3] as Snippet['language'];
  const t0 = performance.now();
  const corral = await Corral.create({ bundled: false, toolDirs: TOOL_DIRS, store: false, size: 1 });
  const result = await corral.invoke(tool(language), { language, code: process.argv[4] }, { mounts: language === 'ruby' ? EMPTY : [] });
  const ms = performance.now() - t0;
  await corral.close();
  if (!result.ok) throw new Error(JSON.stringify(result.error));
  process.stdout.write(JSON.stringify({ ms }));
  process.exit(0);
}

const runs = Number(process.argv[2] ?? 20);
const hasRuby = spawnSync('ruby', ['-e', '']).status === 0;
const self = fileURLToPath(import.meta.url);

function coldMs(s: Snippet): number {
  const times: number[] = [];
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    execFileSync(process.execPath, [self, '--cold', s.language, s.code], { encoding: 'utf8' });
    times.push(performance.now() - t0);
  }
  return median(times);
}

function nativeMs(s: Snippet): number {
  if (s.language === 'ruby' && !hasRuby) return Number.NaN;
  const [cmd, args] = s.language === 'ruby' ? ['ruby', ['-e', s.code]] : [process.execPath, ['-e', s.code]];
  const times: number[] = [];
  for (let i = 0; i < Math.min(runs, 10); i++) {
    const t0 = performance.now();
    execFileSync(cmd as string, args as string[]);
    times.push(performance.now() - t0);
  }
  return median(times);
}

const corral = await Corral.create({ bundled: false, toolDirs: TOOL_DIRS, store: false, size: 1 });
const rows: string[][] = [];
for (const s of SNIPPETS) {
  const call = async () => {
    const result = await corral.invoke(
      tool(s.language),
      { language: s.language, code: s.code },
      { mounts: s.language === 'ruby' ? EMPTY : [] },
    );
    if (!result.ok) throw new Error(`${s.language} ${s.label}: ${JSON.stringify(result.error)}`);
  };
  const warm = await sample(s.language === 'ruby' ? Math.max(3, Math.floor(runs / 4)) : runs, call, 2);
  rows.push([s.language, s.label, fmt(coldMs(s)), fmt(median(warm)), fmt(quantile(warm, 0.9)), fmt(nativeMs(s))]);
}
await corral.close();
console.log(table(['language', 'snippet', 'cold (new process)', 'warm median', 'warm p90', 'native fresh process'], rows));
