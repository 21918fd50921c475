/**
 * `npm run bench:apply-patch`: the apply-patch tool against `git apply`, per
 * patch, on this repository's own history (the last N non-merge commits,
 * binary files left out of the diffs, as in test/agent-tools/apply-patch).
 *
 * Two copies of the first commit's parent are brought along the history
 * side by side: one by the tool through a warm Corral (one worker, no
 * store), one by a `git apply` process per patch (a fresh process is what a
 * harness runs). Both apply the same `git diff A B`, and after each commit
 * both copies must equal each other. Also timed: the check-only mode of each
 * (`check: true` against `git apply --check`). Medians and p90 over the
 * commits, one run, same machine.
 *
 * Usage: node bench/dist/apply-patch.js [--commits N]   (default 50)
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Corral } from '@corral/node';
import { fmt, median, quantile, table } from './stats.js';

const arg = process.argv.indexOf('--commits');
const N = arg > 0 ? Number(process.argv[arg + 1]) : 50;
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const log = (s: string) => process.stderr.write(s + '\n');
const git = (args: string[], cwd = ROOT) => execFileSync('git', args, { cwd, encoding: 'utf8', maxBuffer: 1 << 28 });

function extract(dir: string, commit: string, paths: string[] = []): void {
  const archive = execFileSync(
    'git',
    ['-C', ROOT, 'archive', commit, ...(paths.length ? ['--', ...paths.map((p) => `:(literal)${p}`)] : [])],
    {
      maxBuffer: 1 << 28,
    },
  );
  execFileSync('tar', ['-x', '-C', dir], { input: archive });
}

/** Brings a copy from `at` to `target` by git's own means (used across merges, untimed). */
function checkout(dir: string, at: string, target: string): void {
  const changed = git(['diff', '--no-renames', '--name-status', '-z', at, target]).split('\0').filter(Boolean);
  const files: string[] = [];
  for (let i = 0; i < changed.length; i += 2) {
    if (changed[i] === 'D') rmSync(join(dir, changed[i + 1]!));
    else files.push(changed[i + 1]!);
  }
  if (files.length) extract(dir, target, files);
}

function digest(dir: string): string {
  const h = createHash('sha1');
  const walk = (d: string, rel: string) => {
    for (const e of readdirSync(d, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p, `${rel}${e.name}/`);
      else h.update(`${rel}${e.name}\0`).update(readFileSync(p));
    }
  };
  walk(dir, '');
  return h.digest('hex');
}

const commits = git(['rev-list', '--no-merges', `--max-count=${N}`, 'HEAD'])
  .trim()
  .split('\n')
  .reverse();
const scratch = mkdtempSync(join(tmpdir(), 'corral-bench-apply-'));
const toolDir = join(scratch, 'tool');
const gitDir = join(scratch, 'git');
const corral = await Corral.create({ store: false, size: 1 });
const mounts = [{ guest: '/workspace', access: 'read-write' as const, source: { kind: 'host' as const, path: toolDir } }];

const times = { tool: [] as number[], git: [] as number[], toolCheck: [] as number[], gitCheck: [] as number[] };
const sizes: number[] = [];
let sections = 0;
let at = '';
try {
  for (const [i, commit] of commits.entries()) {
    const parent = git(['rev-parse', `${commit}^`]).trim();
    if (at === '') {
      for (const d of [toolDir, gitDir]) {
        mkdirSync(d);
        extract(d, parent);
      }
    } else if (at !== parent) {
      for (const d of [toolDir, gitDir]) checkout(d, at, parent);
    }
    const binary = git(['diff', '--numstat', '-z', '--no-renames', parent, commit])
      .split('\0')
      .filter((l) => l.startsWith('-\t-\t'))
      .map((l) => l.slice(4));
    const patch = git(['diff', parent, commit, '--', '.', ...binary.map((p) => `:(exclude,literal)${p}`)]);
    if (i === 0) await corral.invoke('apply-patch', { patch, check: true }, { mounts }); // warm: transpile, worker
    if (patch.trim()) {
      sizes.push(Buffer.byteLength(patch));
      let t = performance.now();
      const check = await corral.invoke('apply-patch', { patch, check: true }, { mounts });
      times.toolCheck.push(performance.now() - t);
      t = performance.now();
      const gitCheck = spawnSync('git', ['apply', '--check'], { cwd: gitDir, input: patch });
      times.gitCheck.push(performance.now() - t);
      t = performance.now();
      const r = await corral.invoke('apply-patch', { patch }, { mounts });
      times.tool.push(performance.now() - t);
      t = performance.now();
      const g = spawnSync('git', ['apply'], { cwd: gitDir, input: patch });
      times.git.push(performance.now() - t);
      if (!check.ok || !r.ok || gitCheck.status !== 0 || g.status !== 0)
        throw new Error(`${commit}: tool ${r.ok ? 'ok' : r.error?.message}; git apply exit ${g.status}: ${g.stderr}`);
      sections += (r.output as { files: unknown[] }).files.length;
    }
    for (const [d, p] of binary.map((p) => [toolDir, p] as const).concat(binary.map((p) => [gitDir, p] as const))) {
      rmSync(join(d, p), { force: true });
      if (git(['ls-tree', commit, '--', p]).trim()) extract(d, commit, [p]);
    }
    if (digest(toolDir) !== digest(gitDir)) throw new Error(`${commit}: the two copies differ after applying`);
    at = commit;
  }
} finally {
  await corral.close();
  rmSync(scratch, { recursive: true, force: true });
}

const row = (label: string, xs: number[], base: number[]) => [
  label,
  fmt(median(xs)),
  fmt(quantile(xs, 0.9)),
  `${(median(xs) / median(base)).toFixed(2)}×`,
];
log(`${times.tool.length} patches (${sections} file sections; median ${median(sizes)} bytes, largest ${Math.max(...sizes)} bytes)`);
console.log(
  table(
    ['per patch', 'median', 'p90', 'vs git apply'],
    [
      row('apply-patch through Corral (warm worker, host mount)', times.tool, times.git),
      row('`git apply` (a process per patch)', times.git, times.git),
      row('apply-patch `check: true`', times.toolCheck, times.gitCheck),
      row('`git apply --check`', times.gitCheck, times.gitCheck),
    ],
  ),
);
