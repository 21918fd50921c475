/**
 * `corral serve` as a subprocess for the load benches: started with its own
 * store, its stderr (the request log) kept in a file, its URL read from the
 * line it prints, and its exit observed, so a bench can tell a crash.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteStore, type ExecutionSnapshot } from '@corral/node';

const CLI = new URL('../../packages/node/bin/corral.js', import.meta.url).pathname;

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface ServeProcess {
  url: string;
  child: ChildProcess;
  /** Where the server's stderr (one JSON line per request) went. */
  logPath: string;
  /** True once the process has exited, for whatever reason. */
  readonly exitedEarly: boolean;
  /** SIGTERM, then the exit status and the store's executions by id. */
  stop(): Promise<{ exit: Exit; recorded: Map<string, ExecutionSnapshot> }>;
  /** Remove the temp folder (store, log), unless asked to keep it. */
  cleanUp(keep: boolean): void;
}

export async function startServe(args: string[], log: (line: string) => void): Promise<ServeProcess> {
  const dir = mkdtempSync(join(tmpdir(), 'corral-serve-load-'));
  const storePath = join(dir, 'snapshots.db');
  const logPath = join(dir, 'requests.log');
  // Its own store and policy (a missing file: the empty policy), never the user's.
  const argv = [CLI, 'serve', '--port', '0', '--store', storePath, '--policy', join(dir, 'policy.yaml'), ...args];
  log(`node ${argv.join(' ')}`);
  const child = spawn(process.execPath, argv, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env } });
  const logFile = createWriteStream(logPath);
  child.stderr.pipe(logFile);
  let exitedEarly = false;
  const exited = new Promise<Exit>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  void exited.then(() => (exitedEarly = true));
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c;
      const found = /on (http:\/\/\S+) /.exec(out)?.[1];
      if (found) resolve(found);
    });
    void exited.then(({ code }) => reject(new Error(`corral serve exited ${code} before listening`)));
  });
  return {
    url,
    child,
    logPath,
    get exitedEarly() {
      return exitedEarly;
    },
    async stop() {
      child.kill('SIGTERM');
      const exit = await exited;
      await new Promise((resolve) => logFile.end(resolve));
      const store = await SqliteStore.open(storePath);
      try {
        return { exit, recorded: new Map((await store.listExecutions()).map((e) => [e.id, e])) };
      } finally {
        await store.close();
      }
    },
    cleanUp(keep) {
      if (keep) log(`kept ${dir}`);
      else rmSync(dir, { recursive: true, force: true });
    },
  };
}
