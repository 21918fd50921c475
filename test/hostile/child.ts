/**
 * Helpers for hostile tests whose tool could take the host down: the calls
 * run in a child process (child.mjs), and the test asserts on its exit
 * status as well as on each call's result. A folder tree can be hashed
 * before and after, to show that nothing outside the mounts changed.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, lstatSync, readlinkSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { CorralErrorJSON, MountBinding } from '@corral/node';

const CHILD = new URL('./child.mjs', import.meta.url).pathname;
export const WAT_FIXTURES = new URL('../fixtures/wat/', import.meta.url).pathname;

export interface ChildCall {
  tool: string;
  input?: unknown;
  options?: { mounts?: MountBinding[]; timeoutMs?: number; outputLimitBytes?: number; env?: Record<string, string> };
}

export interface ChildResult {
  tool: string;
  ok: boolean;
  error: CorralErrorJSON | null;
  exit_code: number | null;
  output: unknown;
  stderr_tail: string;
  ms: number;
}

export interface ChildRun {
  /** The child's exit status (0 when it survived every call and closed Corral). */
  status: number | null;
  signal: NodeJS.Signals | null;
  results: ChildResult[];
  /** Peak resident memory of the child process, in MB. */
  maxRssMb: number | undefined;
  /** The child's stderr (V8's "FATAL ERROR" when it died of one). */
  stderr: string;
}

/**
 * Run `calls` through a fresh Corral (tools from `toolDirs`, no store, a
 * private transpile cache) in a child process; `corral` adds Corral options
 * (JSON-able), `nodeArgs` go before the script. Killed after `timeoutMs`.
 * `runtime` runs the child with another runtime's command (Deno's `deno run -A`).
 */
export function runInChild(
  calls: ChildCall[],
  {
    toolDirs = [WAT_FIXTURES],
    corral = {},
    nodeArgs = [],
    timeoutMs = 120_000,
    runtime = [process.execPath],
  }: { toolDirs?: string[]; corral?: Record<string, unknown>; nodeArgs?: string[]; timeoutMs?: number; runtime?: string[] } = {},
): Promise<ChildRun> {
  return new Promise((resolve, reject) => {
    const [command, ...runtimeArgs] = runtime;
    const child = spawn(command!, [...runtimeArgs, ...nodeArgs, CHILD, JSON.stringify({ toolDirs, corral, calls })], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d));
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (status, signal) => {
      clearTimeout(timer);
      const lines = stdout.split('\n');
      const results = lines.filter((l) => l.startsWith('result ')).map((l) => JSON.parse(l.slice(7)) as ChildResult);
      const rss = lines.find((l) => l.startsWith('rss '));
      resolve({ status, signal, results, maxRssMb: rss ? Number(rss.slice(4)) : undefined, stderr });
    });
  });
}

/** SHA-256 over every path, type, mode, link target and file content under `dir`. */
export function treeHash(dir: string): string {
  const hash = createHash('sha256');
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const p = join(d, name);
      const info = lstatSync(p);
      hash.update(`${relative(dir, p)}\0${info.mode}\0`);
      if (info.isSymbolicLink()) hash.update(`link:${readlinkSync(p)}`);
      else if (info.isDirectory()) walk(p);
      else hash.update(readFileSync(p));
      hash.update('\0');
    }
  };
  walk(dir);
  return hash.digest('hex');
}
