// `corral worker` as a real child process for a test: its stdout lines, its
// JSON log events, its exit. stopAll() SIGKILLs whatever is still running
// (call it in afterAll).
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const CLI = fileURLToPath(new URL('../../packages/node/bin/corral.js', import.meta.url));
export const FIXTURES = fileURLToPath(new URL('../fixtures/tools/', import.meta.url));

export interface WorkerProcess {
  child: ChildProcess;
  stdout: string[];
  events: Record<string, unknown>[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const started: WorkerProcess[] = [];

function lines(stream: NodeJS.ReadableStream, each: (line: string) => void): void {
  let buf = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    buf += chunk;
    for (let i = buf.indexOf('\n'); i !== -1; i = buf.indexOf('\n')) {
      each(buf.slice(0, i));
      buf = buf.slice(i + 1);
    }
  });
}

/** Start `corral worker --nats URL --no-bundled --tools FIXTURES --workers 1 …extra` and wait until it says it is ready. */
export async function startWorkerProcess(natsUrl: string, ...extra: string[]): Promise<WorkerProcess> {
  const w = spawnWorkerProcess(['--nats', natsUrl, '--no-bundled', '--tools', FIXTURES, '--workers', '1', ...extra]);
  await waitFor('the worker to say it is ready', () => w.stdout.some((l) => l.includes('worker ready')), w);
  return w;
}

/** Start `corral worker …args` (with `env` added to this process's) without waiting for anything. */
export function spawnWorkerProcess(args: string[], env: Record<string, string> = {}): WorkerProcess {
  const child = spawn(process.execPath, [CLI, 'worker', ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  const w: WorkerProcess = {
    child,
    stdout: [],
    events: [],
    exited: new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal }))),
  };
  started.push(w);
  lines(child.stdout!, (l) => w.stdout.push(l));
  lines(child.stderr!, (l) => {
    try {
      w.events.push(JSON.parse(l));
    } catch {
      w.events.push({ text: l });
    }
  });
  return w;
}

export async function waitFor(what: string, check: () => boolean, w?: WorkerProcess): Promise<void> {
  for (let i = 0; i < 1200; i++) {
    if (check()) return;
    if (w && w.child.exitCode !== null)
      throw new Error(`the worker exited (${w.child.exitCode}) while waiting for ${what}: ${JSON.stringify(w.events)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

export async function stopAllWorkerProcesses(): Promise<void> {
  for (const w of started) if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGKILL');
  await Promise.all(started.map((w) => w.exited));
  started.length = 0;
}

/** Run the CLI to completion (asynchronously: the test's own NATS clients keep running meanwhile). */
export function runCli(...args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    child.once('error', reject);
    child.once('close', (status) => resolve({ status, stdout, stderr }));
  });
}
