// Real `git diff` output for tests, with git's own numbers to compare against.
//
// A TempRepo is a throwaway repository whose config is isolated from the
// machine's (no system/global config, fixed identity and dates,
// core.autocrlf=false), so the diff text is what default git prints.
// numstat and name-status are read with -z, because without it git
// C-quotes non-ASCII and odd paths and the output would need unquoting.
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/** File content, content plus an executable bit, or a symbolic link. */
export type FileSpec = string | Uint8Array | { content: string | Uint8Array; executable?: boolean } | { symlink: string };
/** Repository-relative path ('/'-separated) -> file. */
export type Tree = Record<string, FileSpec>;

export interface NumstatEntry {
  path: string;
  /** Set for renames and copies. */
  oldPath?: string;
  /** null when git printed '-' (binary). */
  additions: number | null;
  deletions: number | null;
  binary: boolean;
}

export interface NameStatusEntry {
  /** As printed: 'A', 'D', 'M', 'T', 'R086', 'C100', ... */
  status: string;
  letter: string;
  /** Similarity for R and C. */
  score?: number;
  path: string;
  oldPath?: string;
}

export interface GitDiff {
  /** `git diff -M <a> <b>` decoded as UTF-8 (what a caller would send). */
  diff: string;
  /** The same output as raw bytes. */
  raw: Buffer;
  numstat: NumstatEntry[];
  nameStatus: NameStatusEntry[];
}

export interface DiffOptions {
  /** Extra options for the patch, numstat and name-status alike (e.g. -C). */
  args?: string[];
  /** Extra options for the patch only (e.g. --binary). */
  patchArgs?: string[];
}

const GIT_ENV: NodeJS.ProcessEnv = {
  PATH: process.env.PATH,
  LC_ALL: 'C',
  TZ: 'UTC',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_AUTHOR_NAME: 'Corral Test',
  GIT_AUTHOR_EMAIL: 'test@corral.invalid',
  GIT_COMMITTER_NAME: 'Corral Test',
  GIT_COMMITTER_EMAIL: 'test@corral.invalid',
  GIT_AUTHOR_DATE: '2024-01-01T00:00:00Z',
  GIT_COMMITTER_DATE: '2024-01-01T00:00:00Z',
  GIT_TERMINAL_PROMPT: '0',
};

export class TempRepo {
  readonly dir: string;

  constructor() {
    this.dir = mkdtempSync(join(tmpdir(), 'corral-git-'));
    this.git(['-c', 'init.defaultBranch=main', 'init', '-q']);
    this.git(['config', 'user.name', 'Corral Test']);
    this.git(['config', 'user.email', 'test@corral.invalid']);
    this.git(['config', 'core.autocrlf', 'false']);
  }

  git(args: string[]): Buffer {
    return execFileSync('git', args, {
      cwd: this.dir,
      env: { ...GIT_ENV, HOME: this.dir },
      maxBuffer: 1 << 30,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  }

  /** Makes the working tree exactly `tree` and commits it; returns the sha. */
  commit(tree: Tree, message = 'commit'): string {
    for (const entry of readdirSync(this.dir)) {
      if (entry !== '.git') rmSync(join(this.dir, entry), { recursive: true, force: true });
    }
    for (const [path, spec] of Object.entries(tree)) {
      const file = join(this.dir, ...path.split('/'));
      mkdirSync(dirname(file), { recursive: true });
      if (typeof spec === 'object' && 'symlink' in spec) {
        symlinkSync(spec.symlink, file);
        continue;
      }
      const content = typeof spec === 'string' || spec instanceof Uint8Array ? spec : spec.content;
      writeFileSync(file, content);
      const executable = typeof spec === 'object' && !(spec instanceof Uint8Array) && spec.executable;
      chmodSync(file, executable ? 0o755 : 0o644);
    }
    this.git(['add', '-A']);
    this.git(['commit', '-q', '--allow-empty', '--no-verify', '-m', message]);
    return this.git(['rev-parse', 'HEAD']).toString('utf8').trim();
  }

  /**
   * `git diff -M a b` plus git's numstat and name-status for the same pair.
   * `args` (e.g. `-C`) apply to all three; `patchArgs` (e.g. `--binary`)
   * only to the patch, because with --numstat they would add a patch too.
   */
  diff(a: string, b: string, opts: DiffOptions = {}): GitDiff {
    const base = ['diff', '--no-color', '--no-ext-diff', '-M', ...(opts.args ?? [])];
    const raw = this.git([...base, ...(opts.patchArgs ?? []), a, b]);
    return {
      diff: raw.toString('utf8'),
      raw,
      numstat: parseNumstatZ(this.git([...base, '--numstat', '-z', a, b]).toString('utf8')),
      nameStatus: parseNameStatusZ(this.git([...base, '--name-status', '-z', a, b]).toString('utf8')),
    };
  }

  dispose(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** One-shot: commit `before`, then `after`, and diff the two commits. */
export function diffTrees(before: Tree, after: Tree, opts: DiffOptions = {}): GitDiff {
  const repo = new TempRepo();
  try {
    const a = repo.commit(before, 'before');
    const b = repo.commit(after, 'after');
    return repo.diff(a, b, opts);
  } finally {
    repo.dispose();
  }
}

/**
 * `--numstat -z`: "ADD\tDEL\tPATH\0", or for renames/copies
 * "ADD\tDEL\t\0OLD\0NEW\0". Binary files print "-" for both counts.
 */
export function parseNumstatZ(out: string): NumstatEntry[] {
  const parts = out.split('\0');
  const entries: NumstatEntry[] = [];
  for (let i = 0; i < parts.length; ) {
    const rec = parts[i++]!;
    if (rec === '') continue;
    const m = /^(-|\d+)\t(-|\d+)\t([\s\S]*)$/.exec(rec);
    if (!m) throw new Error(`unexpected numstat record: ${JSON.stringify(rec)}`);
    const binary = m[1] === '-';
    const entry: NumstatEntry = {
      path: m[3]!,
      additions: binary ? null : Number(m[1]),
      deletions: binary ? null : Number(m[2]),
      binary,
    };
    if (m[3] === '') {
      entry.oldPath = parts[i++]!;
      entry.path = parts[i++]!;
    }
    entries.push(entry);
  }
  return entries;
}

/** `--name-status -z`: "X\0PATH\0", or "R086\0OLD\0NEW\0" / "C100\0OLD\0NEW\0". */
export function parseNameStatusZ(out: string): NameStatusEntry[] {
  const parts = out.split('\0');
  const entries: NameStatusEntry[] = [];
  for (let i = 0; i < parts.length; ) {
    const status = parts[i++]!;
    if (status === '') continue;
    const letter = status[0]!;
    if (letter === 'R' || letter === 'C') {
      const oldPath = parts[i++]!;
      const path = parts[i++]!;
      entries.push({ status, letter, score: Number(status.slice(1)), oldPath, path });
    } else {
      entries.push({ status, letter, path: parts[i++]! });
    }
  }
  return entries;
}
