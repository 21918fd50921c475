/** `corral run` recording in PostgreSQL, and `corral snapshots` reading it back, through the real CLI. */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresStore } from '@corral/postgres';
import { startPostgres, type PostgresCluster } from '../../../test/helpers/postgres.js';

const ROOT = new URL('../../..', import.meta.url).pathname;
const CLI = join(ROOT, 'packages/node/bin/corral.js');
const FIXTURES = join(ROOT, 'test/fixtures/tools');
const dir = mkdtempSync(join(tmpdir(), 'corral-pgcli-'));

let cluster: PostgresCluster;
let url: string;

beforeAll(async () => {
  cluster = await startPostgres();
  url = await cluster.createDatabase('corral_cli');
}, 180_000);

afterAll(async () => {
  await cluster?.destroy();
  rmSync(dir, { recursive: true, force: true });
});

async function corral(args: string[], env: Record<string, string> = {}) {
  return promisify(execFile)(process.execPath, [CLI, ...args], { cwd: ROOT, env: { ...process.env, ...env }, maxBuffer: 64 << 20 }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (err: { code: number; stdout: string; stderr: string }) => ({ code: err.code, stdout: err.stdout, stderr: err.stderr }),
  );
}

describe('corral with a PostgreSQL store', () => {
  it('records `corral run` in the database (--store URL or CORRAL_STORE) and lists, shows and prunes it with `corral snapshots`', async () => {
    const a = await corral(['run', 'echo', '--tools', FIXTURES, '--input', '{"n":1}', '--json', '--store', url]);
    expect(a.code).toBe(0);
    const first = JSON.parse(a.stdout).snapshot.id as string;
    const b = await corral(['run', 'exit-fail', '--tools', FIXTURES, '--input', '{}', '--json'], { CORRAL_STORE: url });
    const second = JSON.parse(b.stdout).snapshot.id as string;

    const list = await corral(['snapshots', 'list', '--store', url]);
    expect(list.code).toBe(0);
    const lines = list.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^ID\s+TIME \(UTC\)\s+TOOL\s+STATUS\s+ERROR\s+DURATION$/);
    expect(lines.slice(1).map((l) => l.split(/\s+/)[0])).toEqual([second, first]);
    expect(lines[1]).toMatch(/exit-fail@1\.0\.0\s+failed\s+E_UNEXPECTED_EXIT/);
    expect(lines[2]).toMatch(/echo@\S+\s+ok/);

    const shown = await corral(['snapshots', 'show', first, '--json'], { CORRAL_STORE: url });
    expect(JSON.parse(shown.stdout)).toMatchObject({ id: first, tool: 'echo', status: 'ok', input_json: '{"n":1}' });

    // In the database itself, as another process reads it.
    const store = await PostgresStore.open(url);
    expect(await store.getExecution(first)).toMatchObject({ tool: 'echo', status: 'ok' });
    await store.close();

    // A database has no folder for a default archive: prune asks for one, then writes it before deleting.
    const noArchive = await corral(['snapshots', 'prune', '--keep', '1', '--store', url]);
    expect(noArchive.code).toBe(2);
    expect(noArchive.stderr).toMatch(/--archive FILE/);
    const archive = join(dir, 'archive.jsonl');
    const pruned = await corral(['snapshots', 'prune', '--keep', '1', '--store', url, '--archive', archive]);
    expect(pruned.code).toBe(0);
    expect(
      readFileSync(archive, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).id),
    ).toEqual([first]);
    expect((await corral(['snapshots', 'list', '--store', url])).stdout).not.toContain(first);
  });

  it('says why when the database cannot be reached', async () => {
    const down = 'postgres://postgres@127.0.0.1:1/corral_cli';
    const r = await corral(['snapshots', 'list', '--store', down]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/E_STORE/);
    expect(r.stderr).toMatch(/cannot reach PostgreSQL/);
  });
});
