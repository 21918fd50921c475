/**
 * A throwaway PostgreSQL cluster for tests: initdb in a temp folder, the
 * server on 127.0.0.1 and a free port (its socket inside that folder too),
 * trust authentication for the `postgres` role, stopped and deleted by
 * `destroy()` (and at process exit, should a test run die first).
 *
 * initdb and the server refuse to run as root, and CI runs as root: then
 * they run as the `postgres` user Debian's package creates (runuser), in a
 * folder that user owns.
 */
import { execFile, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';

const run = promisify(execFile);

export interface PostgresCluster {
  readonly port: number;
  /** The cluster's folder (data, socket, log). */
  readonly dir: string;
  /** A URL for `database` (default `postgres`) as the `postgres` role. */
  url(database?: string): string;
  /** Create a database and return its URL. */
  createDatabase(name: string): Promise<string>;
  /** Run SQL as the superuser in `database` (default `postgres`): for a test's own checks and damage. */
  sql<T extends pg.QueryResultRow = pg.QueryResultRow>(text: string, params?: unknown[], database?: string): Promise<pg.QueryResult<T>>;
  /** Stop the server (`fast`: disconnect clients, like a restart does; `immediate`: as if it crashed). */
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
  /** Start it again on the same port. */
  start(): Promise<void>;
  /** stop then start. */
  restart(mode?: 'fast' | 'immediate'): Promise<void>;
  /** Stop the server and delete the folder. Safe to call twice. */
  destroy(): Promise<void>;
}

/** PostgreSQL's server programs: $PG_BIN, else the newest /usr/lib/postgresql/N/bin (Debian's layout). */
function binDir(): string {
  if (process.env.PG_BIN) return process.env.PG_BIN;
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions.length === 0) {
    throw new Error(
      'PostgreSQL server programs not found (no /usr/lib/postgresql/N/bin/initdb): install Debian’s postgresql, or set PG_BIN',
    );
  }
  return join(root, versions[0]!, 'bin');
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/** A command line that runs `program` as the postgres user when we are root. */
function asOwner(program: string, args: string[]): [string, string[]] {
  return process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', program, ...args]] : [program, args];
}

const live = new Set<() => void>();
process.once('exit', () => {
  for (const kill of live) kill();
});

export async function startPostgres(): Promise<PostgresCluster> {
  const bin = binDir();
  const dir = mkdtempSync(join(tmpdir(), 'corral-pg-'));
  const data = join(dir, 'data');
  const log = join(dir, 'server.log');
  if (process.getuid?.() === 0) {
    const ids = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
    const gid = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' });
    if (ids.status !== 0)
      throw new Error('running as root, and there is no postgres user to run PostgreSQL as (install Debian’s postgresql)');
    chownSync(dir, Number(ids.stdout.trim()), Number(gid.stdout.trim()));
  }
  const exec = (program: string, args: string[]) => {
    const [cmd, argv] = asOwner(join(bin, program), args);
    return run(cmd, argv, { cwd: dir, timeout: 120_000 });
  };
  // Synchronous, for the exit hook: a dying test process still stops its server.
  const kill = () => {
    const [cmd, argv] = asOwner(join(bin, 'pg_ctl'), ['stop', '-D', data, '-m', 'immediate', '-w']);
    spawnSync(cmd, argv, { stdio: 'ignore', timeout: 30_000 });
    rmSync(dir, { recursive: true, force: true });
  };
  live.add(kill);
  let port = 0;
  const start = async () => {
    await exec('pg_ctl', ['start', '-D', data, '-l', log, '-w', '-t', '60', '-o', `-h 127.0.0.1 -p ${port} -k ${dir}`]);
  };
  try {
    await exec('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C.UTF-8', '--no-sync']);
    // Another program may take the free port before the server does: try a few.
    for (let tries = 1; ; tries++) {
      port = await freePort();
      try {
        await start();
        break;
      } catch (err) {
        if (tries >= 3) throw err;
      }
    }
  } catch (err) {
    live.delete(kill);
    kill();
    throw err;
  }
  const url = (database = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${database}`;
  const sql = async <T extends pg.QueryResultRow>(text: string, params?: unknown[], database?: string) => {
    const client = new pg.Client({ connectionString: url(database) });
    await client.connect();
    try {
      return await client.query<T>(text, params);
    } finally {
      await client.end();
    }
  };
  const stop = async (mode: 'fast' | 'immediate' = 'fast') => {
    await exec('pg_ctl', ['stop', '-D', data, '-m', mode, '-w', '-t', '60']);
  };
  let destroyed = false;
  return {
    port,
    dir,
    url,
    sql,
    async createDatabase(name) {
      await sql(`CREATE DATABASE "${name.replace(/"/g, '""')}"`);
      return url(name);
    },
    stop,
    start,
    async restart(mode) {
      await stop(mode);
      await start();
    },
    async destroy() {
      if (destroyed) return;
      destroyed = true;
      live.delete(kill);
      await stop('fast').catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
