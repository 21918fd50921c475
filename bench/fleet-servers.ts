/**
 * The servers `bench/fleet.ts` measures against, on this machine: nats-server
 * with JetStream (file store in a temp dir) and a throwaway PostgreSQL
 * cluster (initdb in a temp dir, default durability: fsync and synchronous
 * commit on), both on 127.0.0.1 and free ports, stopped and deleted by stop().
 * As root, PostgreSQL runs as the postgres user (it refuses root).
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

export interface BenchServer {
  url: string;
  /** Process ids whose CPU time is this server's (read when asked: PostgreSQL's backends come and go). */
  pids(): number[];
  stop(): Promise<void>;
}

export async function startNatsServer(): Promise<BenchServer> {
  const dir = mkdtempSync(join(tmpdir(), 'corral-bench-nats-'));
  const port = await freePort();
  const child: ChildProcess = spawn(
    process.env.NATS_SERVER ?? '/usr/sbin/nats-server',
    ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', dir],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let log = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`nats-server did not start:\n${log}`)), 20_000);
    child.stderr!.on('data', (c: Buffer) => {
      log = (log + c.toString()).slice(-16_384);
      if (log.includes('Server is ready')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => reject(new Error(`nats-server exited (${code}):\n${log}`)));
  });
  child.stderr!.removeAllListeners('data');
  child.stderr!.resume();
  const kill = () => child.kill('SIGKILL');
  process.once('exit', kill);
  return {
    url: `nats://127.0.0.1:${port}`,
    pids: () => [child.pid!],
    async stop() {
      process.off('exit', kill);
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function pgBin(): string {
  if (process.env.PG_BIN) return process.env.PG_BIN;
  const root = '/usr/lib/postgresql';
  const v = existsSync(root)
    ? readdirSync(root)
        .filter((d) => existsSync(join(root, d, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (v.length === 0) throw new Error('PostgreSQL server programs not found (install Debian’s postgresql, or set PG_BIN)');
  return join(root, v[0]!, 'bin');
}

export async function startPostgresServer(): Promise<BenchServer> {
  const bin = pgBin();
  const dir = mkdtempSync(join(tmpdir(), 'corral-bench-pg-'));
  const data = join(dir, 'data');
  const root = process.getuid?.() === 0;
  if (root) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(dir, uid, gid);
  }
  const run = (program: string, args: string[]) => {
    const [cmd, argv] = root ? ['runuser', ['-u', 'postgres', '--', join(bin, program), ...args]] : [join(bin, program), args];
    const r = spawnSync(cmd, argv, { cwd: dir, encoding: 'utf8', timeout: 120_000 });
    if (r.status !== 0) throw new Error(`${program} failed: ${r.stderr}`);
  };
  const kill = () => {
    spawnSync(
      ...((root
        ? ['runuser', ['-u', 'postgres', '--', join(bin, 'pg_ctl'), 'stop', '-D', data, '-m', 'immediate']]
        : [join(bin, 'pg_ctl'), ['stop', '-D', data, '-m', 'immediate']]) as [string, string[]]),
    );
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', kill);
  run('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C.UTF-8', '--no-sync']);
  const port = await freePort();
  run('pg_ctl', ['start', '-D', data, '-l', join(dir, 'server.log'), '-w', '-t', '60', '-o', `-h 127.0.0.1 -p ${port} -k ${dir}`]);
  const postmaster = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    pids: () => [postmaster, ...childrenOf(postmaster)],
    async stop() {
      process.off('exit', kill);
      run('pg_ctl', ['stop', '-D', data, '-m', 'fast', '-w']);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) out.push(Number(d));
    } catch {
      // gone
    }
  }
  return out;
}

const TICK = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

/** CPU seconds (user + system, children already waited for included) these processes have used. */
export function cpuSeconds(pids: number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // utime, stime, cutime, cstime are fields 14-17 (1-based), 12-15 after the command.
      ticks += Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
    } catch {
      // gone
    }
  }
  return ticks / TICK;
}
