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

export async function startNats(): Promise<NatsServer> {
  const dir = mkdtempSync(join(tmpdir(), 'corral-nats-'));
  const port = await freePort();
  const child: ChildProcess = spawn(NATS_SERVER, ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', dir], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const kill = () => child.kill('SIGKILL');
  process.once('exit', kill);
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
    kill();
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  child.stderr!.resume();
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    async stop() {
      process.removeListener('exit', kill);
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        const t = setTimeout(kill, 5000);
        await exited;
        clearTimeout(t);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
