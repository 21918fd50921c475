// A real nats-server with JetStream for a test file: loopback only, a free
// port, its store in a temp dir; stop() kills it and removes the dir (call it
// in afterAll; it is also killed if the test process exits first).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const NATS_SERVER = process.env.NATS_SERVER ?? '/usr/sbin/nats-server';

export interface NatsServer {
  url: string;
  port: number;
  /** Stop the server (SIGTERM, its store kept) and start it again on the same port and store. */
  restart(): Promise<void>;
  /** Stop the server, keeping its store: clients see it gone until start(). */
  halt(): Promise<void>;
  /** Start a halted server again, on the same port with the same store. */
  start(): Promise<void>;
  stop(): Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

/** Start nats-server on `port` with its store in `dir`, resolved once it is ready. */
async function spawnServer(port: number, dir: string): Promise<ChildProcess> {
  const child: ChildProcess = spawn(NATS_SERVER, ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', dir], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`nats-server did not start in 20 s:\n${log}`)), 20_000);
      child.stderr!.on('data', (chunk: Buffer) => {
        log += chunk.toString();
        if (log.length > 64 * 1024) log = log.slice(-32 * 1024);
        if (log.includes('Server is ready')) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`nats-server exited with code ${code}:\n${log}`));
      });
      child.once('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
    });
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  child.stderr!.removeAllListeners('data');
  child.stderr!.resume();
  return child;
}

async function stopServer(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  const t = setTimeout(() => child.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(t);
}

export async function startNats(): Promise<NatsServer> {
  const dir = mkdtempSync(join(tmpdir(), 'corral-nats-'));
  const port = await freePort();
  let child: ChildProcess | undefined;
  const kill = () => child?.kill('SIGKILL');
  process.once('exit', kill);
  try {
    child = await spawnServer(port, dir);
  } catch (err) {
    process.removeListener('exit', kill);
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    async restart() {
      await stopServer(child!);
      child = await spawnServer(port, dir);
    },
    async halt() {
      await stopServer(child!);
    },
    async start() {
      child = await spawnServer(port, dir);
    },
    async stop() {
      process.removeListener('exit', kill);
      await stopServer(child!);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
