/**
 * The grep tool over this repository (issue 13's target: within 3x of
 * `git grep` on a warm cache), side by side in one run with `git grep` and
 * a pure-JS scan (readdir + RegExp, the same files). The tree is HEAD as
 * `git archive` writes it, committed again in a fresh repository, so all
 * three see the same files. Every row is the median of N warm runs (after
 * 2 untimed ones) in one process; Corral's worker and compiled tool stay
 * loaded, as an agent's session keeps them. The preview1 build of the same
 * tool (grep.module.wasm, run by Corral's own preview1 host) is a row too.
 *
 *   npm run build && node bench/dist/grep.js [--runs N]
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Corral } from '@corral/node';
import { fmt, median, sample, table } from './stats.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const runsArg = process.argv.indexOf('--runs');
const RUNS = runsArg > 0 ? Number(process.argv[runsArg + 1]) : 10;

interface Case {
  label: string;
  pattern: string;
  ignore_case?: boolean;
  word?: boolean;
  fixed_strings?: boolean;
}

const CASES: Case[] = [
  { label: 'literal `corral_`', pattern: 'corral_' },
  { label: '`function [a-zA-Z_]+\\(` (literal prefix)', pattern: 'function [a-zA-Z_]+\\(' },
  { label: '`TODO\\|FIXME` (no literal: regexec on every file)', pattern: 'TODO|FIXME' },
  { label: '`-i error`', pattern: 'error', ignore_case: true },
  { label: '`-w -F test`', pattern: 'test', word: true, fixed_strings: true },
];

const gitEnv = { PATH: process.env.PATH, LC_ALL: 'C', GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' };

function gitArgs(c: Case): string[] {
  const args = ['grep', '-I', '-n', '--column'];
  if (c.ignore_case) args.push('-i');
  if (c.word) args.push('-w');
  args.push(c.fixed_strings ? '-F' : '-E', '-e', c.pattern);
  return args;
}

/** The pure-JS reference: walk with readdir (skipping .git and what the top .gitignore names plainly), RegExp per line. */
function jsScan(dir: string, c: Case, skip: Set<string>): number {
  const escaped = c.fixed_strings ? c.pattern.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') : c.pattern;
  const source = c.word ? `(?<![A-Za-z0-9_])(?:${escaped})(?![A-Za-z0-9_])` : escaped;
  const re = new RegExp(source, c.ignore_case ? 'i' : '');
  let count = 0;
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (skip.has(e.name)) continue;
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) {
        const buf = readFileSync(p);
        if (buf.subarray(0, 8000).includes(0)) continue;
        for (const line of buf.toString('latin1').split('\n')) if (re.test(line)) count++;
      }
    }
  };
  walk(dir);
  return count;
}

async function main(): Promise<void> {
  const tree = mkdtempSync(join(tmpdir(), 'corral-bench-grep-'));
  const tools = mkdtempSync(join(tmpdir(), 'corral-bench-grep-tools-'));
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
    execFileSync('tar', ['-x', '-C', tree], {
      input: execFileSync('git', ['archive', '--format=tar', 'HEAD'], { cwd: ROOT, maxBuffer: 2 ** 30 }),
    });
    for (const args of [
      ['init', '-q'],
      ['add', '-A'],
      ['-c', 'user.name=b', '-c', 'user.email=b@b', 'commit', '-qm', 'x'],
    ])
      execFileSync('git', args, { cwd: tree, env: gitEnv });
    const files = execFileSync('git', ['ls-files'], { cwd: tree, encoding: 'utf8' }).split('\n').filter(Boolean).length;
    const skip = new Set([
      '.git',
      ...readFileSync(join(tree, '.gitignore'), 'utf8')
        .split('\n')
        .map((l) => l.replace(/\/$/, ''))
        .filter((l) => /^[\w.-]+$/.test(l)),
    ]);

    // The preview1 build of the same tool, as a tool of its own.
    const spec = JSON.parse(readFileSync(join(ROOT, 'wasm-tools/grep/tool-spec.json'), 'utf8'));
    mkdirSync(join(tools, 'grep-preview1'));
    copyFileSync(join(ROOT, 'wasm-tools/grep/grep.module.wasm'), join(tools, 'grep-preview1/grep.module.wasm'));
    writeFileSync(
      join(tools, 'grep-preview1/tool-spec.json'),
      JSON.stringify({ ...spec, name: 'grep-preview1', component: 'grep.module.wasm' }),
    );

    const corral = await Corral.create({ store: false, size: 1, toolDirs: [tools] });
    const mounts = [{ guest: '/workspace', access: 'read' as const, source: { kind: 'host' as const, path: tree } }];
    const rows: string[][] = [];
    try {
      for (const c of CASES) {
        const { label, ...flags } = c;
        const input = { ...flags, max_results: 100000 };
        let toolCount = 0;
        const tool = await sample(
          RUNS,
          async () => {
            const r = await corral.invoke('grep', input, { mounts });
            if (!r.ok) throw new Error(JSON.stringify(r.error));
            toolCount = (r.output as { count: number }).count;
          },
          2,
        );
        const preview1 = await sample(
          RUNS,
          async () => {
            const r = await corral.invoke('grep-preview1', input, { mounts });
            if (!r.ok) throw new Error(JSON.stringify(r.error));
          },
          2,
        );
        let gitCount = 0;
        const git = await sample(
          RUNS,
          () => {
            const r = spawnSync('git', gitArgs(c), { cwd: tree, env: gitEnv, maxBuffer: 2 ** 30, encoding: 'utf8' });
            gitCount = r.stdout.split('\n').filter(Boolean).length;
          },
          2,
        );
        let jsCount = 0;
        const js = await sample(
          RUNS,
          () => {
            jsCount = jsScan(tree, c, skip);
          },
          2,
        );
        const ratio = median(tool) / median(git);
        rows.push([
          label,
          `${toolCount} / ${gitCount} / ${jsCount}`,
          fmt(median(tool)),
          fmt(median(preview1)),
          fmt(median(git)),
          fmt(median(js)),
          `${ratio.toFixed(1)}x`,
        ]);
      }
    } finally {
      await corral.close();
    }
    console.log(`grep over this repository at ${head} (${files} files, git archive), median of ${RUNS} warm runs each\n`);
    console.log(
      table(
        [
          'pattern',
          'matches (tool / git / JS)',
          'Corral grep (component)',
          'Corral grep (preview1 module)',
          '`git grep`',
          'pure JS',
          'tool / git',
        ],
        rows,
      ),
    );
  } finally {
    rmSync(tree, { recursive: true, force: true });
    rmSync(tools, { recursive: true, force: true });
  }
}

await main();
