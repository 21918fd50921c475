import { execFile } from 'node:child_process';
import { type AddressInfo, connect, createServer } from 'node:net';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ExecutionOutcome, Store } from '@corral/core';
import { PostgresStore } from '@corral/postgres';
import { startPostgres, type PostgresCluster } from '../../../test/helpers/postgres.js';
import { describeStoreConformance, intent, outcome, type StoreHarness } from '../../../test/store-conformance.js';

let cluster: PostgresCluster;
let url: string;

beforeAll(async () => {
  cluster = await startPostgres();
  url = await cluster.createDatabase('corral_test');
}, 180_000);

afterAll(async () => {
  await cluster?.destroy();
});

let schemas = 0;
const freshSchema = () => `t_${process.pid}_${schemas++}`;

/** The conformance fixture: each test its own schema in one database, dropped afterwards. */
async function postgresFixture(): Promise<StoreHarness> {
  const schema = freshSchema();
  let store: Store = await PostgresStore.open(url, { schema });
  return {
    store,
    reopen: async () => {
      await store.close();
      return (store = await PostgresStore.open(url, { schema }));
    },
    // The superuser's own connection, as a program that damages the tables would use.
    damage: async (what, key, fields) => {
      const columns = Object.keys(fields);
      const set = columns.map((c, n) => `${c} = $${n + 1}`).join(', ');
      const keys = Array.isArray(key) ? key : [key];
      const where =
        what === 'workflow_run' ? `id = $${columns.length + 1}` : `run_id = $${columns.length + 1} AND seq = $${columns.length + 2}`;
      const table = what === 'workflow_run' ? 'workflow_runs' : 'workflow_events';
      const result = await cluster.sql(
        `UPDATE "${schema}".${table} SET ${set} WHERE ${where}`,
        [...Object.values(fields), ...keys],
        'corral_test',
      );
      if (result.rowCount !== 1) throw new Error(`nothing to damage at ${String(key)}`);
    },
    cleanup: async () => {
      await store.close();
      await cluster.sql(`DROP SCHEMA "${schema}" CASCADE`, [], 'corral_test');
    },
  };
}

describeStoreConformance('PostgresStore', postgresFixture);

const T0 = 1_764_409_626_123_456_789n;
const at = (n: number) => (T0 + BigInt(n)).toString();

describe('PostgresStore schema', () => {
  it('creates its schema once when many processes’ pools open it at the same moment, and reopens it', async () => {
    const schema = freshSchema();
    const stores = await Promise.all(Array.from({ length: 6 }, () => PostgresStore.open(url, { schema, maxConnections: 2 })));
    const i = intent();
    await stores[0]!.beginExecution(i);
    for (const s of stores) expect(await s.getExecution(i.id)).toMatchObject({ id: i.id, status: 'interrupted' });
    await Promise.all(stores.map((s) => s.close()));
    const meta = await cluster.sql(`SELECT application, schema_version FROM "${schema}".corral_meta`, [], 'corral_test');
    expect(meta.rows).toEqual([{ application: 'corral', schema_version: 1 }]);
    const again = await PostgresStore.open(url, { schema });
    expect(await again.getExecution(i.id)).toMatchObject({ id: i.id });
    await again.close();
  });

  it('refuses a schema written by a newer Corral, changing nothing', async () => {
    const schema = freshSchema();
    const store = await PostgresStore.open(url, { schema });
    await store.close();
    await cluster.sql(`UPDATE "${schema}".corral_meta SET schema_version = 99`, [], 'corral_test');
    await expect(PostgresStore.open(url, { schema })).rejects.toMatchObject({
      code: 'E_STORE',
      message: /newer Corral \(schema version 99; this Corral understands up to 1\)/,
      details: { schema, schema_version: 99, supported_version: 1 },
    });
    const meta = await cluster.sql(`SELECT schema_version FROM "${schema}".corral_meta`, [], 'corral_test');
    expect(meta.rows).toEqual([{ schema_version: 99 }]);
  });

  it('refuses a schema holding another program’s tables, and a Corral schema with something added, writing nothing', async () => {
    await cluster.sql('CREATE SCHEMA shop; CREATE TABLE shop.orders (id int PRIMARY KEY)', [], 'corral_test');
    await expect(PostgresStore.open(url, { schema: 'shop' })).rejects.toMatchObject({
      code: 'E_STORE',
      message: /holds tables that are not a Corral snapshot store's \(i orders_pkey, r orders\)/,
      details: { schema: 'shop', tables: ['orders'] },
    });
    const left = await cluster.sql(
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'shop' ORDER BY 1",
      [],
      'corral_test',
    );
    expect(left.rows).toEqual([{ table_name: 'orders' }]);

    // Corral's schema with a trigger another program added (it would run on every write) and a stray table.
    const schema = freshSchema();
    await (await PostgresStore.open(url, { schema })).close();
    await cluster.sql(
      `CREATE FUNCTION "${schema}".spy() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
       CREATE TRIGGER spy BEFORE INSERT ON "${schema}".executions FOR EACH ROW EXECUTE FUNCTION "${schema}".spy();
       CREATE TABLE "${schema}".extra (x int)`,
      [],
      'corral_test',
    );
    await expect(PostgresStore.open(url, { schema })).rejects.toMatchObject({
      code: 'E_STORE',
      message: /does not hold its schema \(not Corral’s: r extra, f spy, t spy\)/,
      details: { unexpected: ['r extra', 'f spy', 't spy'], missing: [] },
    });

    // A Corral table whose columns another program changed.
    const altered = freshSchema();
    await (await PostgresStore.open(url, { schema: altered })).close();
    await cluster.sql(`ALTER TABLE "${altered}".executions ALTER COLUMN tool DROP NOT NULL`, [], 'corral_test');
    await expect(PostgresStore.open(url, { schema: altered })).rejects.toMatchObject({
      code: 'E_STORE',
      message: /columns changed: executions/,
      details: { missing: ['columns of executions'] },
    });
  });

  it('refuses bad options and URLs with E_INPUT_VALIDATION, and a database it cannot reach with E_STORE', async () => {
    await expect(PostgresStore.open('mysql://x@127.0.0.1/db')).rejects.toMatchObject({
      code: 'E_INPUT_VALIDATION',
      details: { option: 'url' },
    });
    await expect(PostgresStore.open('not a url')).rejects.toMatchObject({ code: 'E_INPUT_VALIDATION', details: { option: 'url' } });
    await expect(PostgresStore.open(url, { schema: 'Robert"); DROP' })).rejects.toMatchObject({
      code: 'E_INPUT_VALIDATION',
      details: { option: 'schema' },
    });
    await expect(PostgresStore.open(url, { maxConnections: 0 })).rejects.toMatchObject({ code: 'E_INPUT_VALIDATION' });
    // A database that does not exist: the server's own words, and no password in the message.
    const missing = cluster.url('no_such_db').replace('postgres@', 'postgres:s3cret@');
    const refused = await PostgresStore.open(missing).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: 'E_STORE', message: /does not exist/, details: { pg_code: '3D000' } });
    expect(String((refused as Error).message)).not.toContain('s3cret');
    // Nothing listening: said so, after a few tries, and retryable.
    const closedPort = `postgres://postgres@127.0.0.1:1/corral_test`;
    await expect(PostgresStore.open(closedPort, { connectTimeoutMs: 2000 })).rejects.toMatchObject({
      code: 'E_STORE',
      message: /cannot reach PostgreSQL/,
      retryable: true,
      details: { pg_code: 'ECONNREFUSED' },
    });
  });
});

describe('PostgresStore shared by processes', () => {
  const outcomes = (n: number): [ExecutionOutcome, ExecutionOutcome] => [
    outcome({ exit_code: 1, stdout_head: `a${n}`, result_ns: at(10) }),
    outcome({ exit_code: 2, stdout_head: `b${n}`, result_ns: at(20) }),
  ];

  it('of two pools finishing the same call at once, exactly one records its result', async () => {
    const schema = freshSchema();
    const [a, b] = [await PostgresStore.open(url, { schema }), await PostgresStore.open(url, { schema })];
    const intents = Array.from({ length: 40 }, (_, n) => intent({ intent_ns: at(n) }));
    for (const i of intents) await a.beginExecution(i);
    // A second intent with the same id from the other pool fails on the key.
    await expect(b.beginExecution(intents[0]!)).rejects.toMatchObject({ code: 'E_STORE', message: /already exists/ });
    const settled = await Promise.all(
      intents.map((i, n) => Promise.allSettled([a.finishExecution(i.id, outcomes(n)[0]), b.finishExecution(i.id, outcomes(n)[1])])),
    );
    for (const [n, pair] of settled.entries()) {
      const won = pair.findIndex((s) => s.status === 'fulfilled');
      expect(pair.filter((s) => s.status === 'fulfilled')).toHaveLength(1);
      const lost = pair[1 - won] as PromiseRejectedResult;
      expect(lost.reason).toMatchObject({ code: 'E_STORE', message: /already has a result/ });
      const kept = await a.getExecution(intents[n]!.id);
      expect(kept).toMatchObject({ exit_code: won + 1, stdout_head: outcomes(n)[won]!.stdout_head });
    }
    await Promise.all([a.close(), b.close()]);
  });

  it('three processes opening one new schema at once and writing to it lose nothing', async () => {
    const schema = freshSchema();
    // Each creates (or finds) the schema, then records 90 calls on 3 lanes.
    const script = `
      import { PostgresStore } from '@corral/postgres';
      import { nowNs } from '@corral/core';
      const store = await PostgresStore.open(${JSON.stringify(url)}, { schema: ${JSON.stringify(schema)}, maxConnections: 3 });
      await Promise.all([0, 1, 2].map(async () => {
        for (let i = 0; i < 30; i++) {
          const id = crypto.randomUUID();
          await store.beginExecution({ id, decision_id: null, tool: 'p' + process.pid, version: '1.0.0', wasm_sha256: null,
            input_sha256: 'f'.repeat(64), input_json: '{"same":true}', intent_ns: nowNs() });
          await store.finishExecution(id, { result_ns: nowNs(), exit_code: 0, error_code: null, error_message: null,
            stdout_sha256: null, stdout_head: '', stdout_tail: '', stderr_head: '', stderr_tail: '', duration_ms: 1, peak_memory_bytes: null });
        }
      }));
      await store.close();`;
    const ROOT = new URL('../../..', import.meta.url).pathname;
    const run = () => promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT });
    await Promise.all([run(), run(), run()]);
    const store = await PostgresStore.open(url, { schema });
    const all = await store.listExecutions();
    expect(all).toHaveLength(270);
    expect(new Set(all.map((e) => e.tool)).size).toBe(3);
    expect(all.every((e) => e.status === 'ok' && e.input_json === '{"same":true}')).toBe(true);
    const inputs = await cluster.sql(`SELECT count(*)::int AS n FROM "${schema}".inputs`, [], 'corral_test');
    expect(inputs.rows).toEqual([{ n: 1 }]);
    await store.close();
  });

  it('a prune in one pool never drops an input a call in another pool is recording', async () => {
    const schema = freshSchema();
    const [a, b] = [await PostgresStore.open(url, { schema }), await PostgresStore.open(url, { schema })];
    const text = '{"shared":"input"}';
    let writing = true;
    const writes = (async () => {
      try {
        for (let n = 0; n < 150; n++) {
          await a.beginExecution(intent({ intent_ns: at(1000 + n), input_sha256: '9'.repeat(64), input_json: text }));
        }
      } finally {
        writing = false; // a failed write stops the prunes too
      }
    })();
    let prunes = 0;
    while (writing) {
      await b.prune({ keep: 0 });
      prunes++;
    }
    await writes;
    // Whatever the prunes left reads back with its input, and the next prune empties the table of inputs.
    for (const e of await b.listExecutions()) expect(e.input_json).toBe(text);
    expect(prunes).toBeGreaterThan(0);
    await b.prune({ keep: 0 });
    const inputs = await cluster.sql(`SELECT count(*)::int AS n FROM "${schema}".inputs`, [], 'corral_test');
    expect(inputs.rows).toEqual([{ n: 0 }]);
    await Promise.all([a.close(), b.close()]);
  });

  it('of two pools finishing the same fleet call at once, exactly one writes outcome and result', async () => {
    const schema = freshSchema();
    const [a, b] = [await PostgresStore.open(url, { schema }), await PostgresStore.open(url, { schema })];
    const intents = Array.from({ length: 40 }, (_, n) => intent({ intent_ns: at(n) }));
    for (const i of intents) await a.beginExecution(i);
    const bytes = (n: number, who: number) => new TextEncoder().encode(`{"call":${n},"by":${who}}`);
    const results = await Promise.all(
      intents.map((i, n) =>
        Promise.all([a.finishCall(i.id, outcomes(n)[0], bytes(n, 0)), b.finishCall(i.id, outcomes(n)[1], bytes(n, 1))]),
      ),
    );
    for (const [n, pair] of results.entries()) {
      expect(pair.filter(Boolean)).toHaveLength(1);
      const won = pair.indexOf(true);
      expect(await b.getCallResult(intents[n]!.id)).toEqual(bytes(n, won));
      expect(await a.getExecution(intents[n]!.id)).toMatchObject({ exit_code: won + 1 });
    }
    await Promise.all([a.close(), b.close()]);
  });
});

describe('PostgresStore fleet call results', () => {
  it('keeps a call’s result with its outcome, refuses unknown keys and oversized results, and prunes it with its execution', async () => {
    const store = await PostgresStore.open(url, { schema: freshSchema() });
    const i = intent({ intent_ns: at(1) });
    await store.beginExecution(i);
    expect(await store.getCallResult(i.id)).toBeNull();
    // Every byte value, as an encoded result may hold.
    const result = Uint8Array.from({ length: 1024 }, (_, n) => n % 256);
    await expect(store.finishCall('no-such-call', outcome(), result)).rejects.toMatchObject({ code: 'E_STORE', message: /no-such-call/ });
    const big = new Uint8Array(16 * 1024 * 1024 + 1);
    await expect(store.finishCall(i.id, outcome(), big)).rejects.toMatchObject({
      code: 'E_STORE',
      message: /over the 16777216-byte limit/,
    });
    expect(await store.getExecution(i.id)).toMatchObject({ status: 'interrupted' });
    expect(await store.finishCall(i.id, outcome({ exit_code: 3 }), result.subarray(1))).toBe(true);
    expect(await store.getCallResult(i.id)).toEqual(result.subarray(1));
    expect(await store.getExecution(i.id)).toMatchObject({ status: 'ok', exit_code: 3 });
    // A second finish writes nothing.
    expect(await store.finishCall(i.id, outcome({ exit_code: 4 }), new Uint8Array([1]))).toBe(false);
    expect(await store.getCallResult(i.id)).toEqual(result.subarray(1));
    expect(await store.getExecution(i.id)).toMatchObject({ exit_code: 3 });
    // A plain finishExecution's call has no fleet result; then finishCall is refused as finished.
    const j = intent({ intent_ns: at(2) });
    await store.beginExecution(j);
    await store.finishExecution(j.id, outcome());
    expect(await store.finishCall(j.id, outcome(), result)).toBe(false);
    expect(await store.getCallResult(j.id)).toBeNull();
    await store.prune({ olderThan: at(2) });
    expect(await store.getCallResult(i.id)).toBeNull();
    await store.close();
  });
});

describe('PostgresStore across a server restart', () => {
  it('replaces connections the server kills mid-write: every acknowledged write is there, every failure is a retryable E_STORE', async () => {
    const schema = freshSchema();
    const store = await PostgresStore.open(url, { schema, maxConnections: 4 });
    // Kill the store's connections a few times while writes run (another session's pg_terminate_backend).
    const killWhile = async <T>(writes: Promise<T>) => {
      let killed = 0;
      for (let round = 0; round < 5; round++) {
        const r = await cluster.sql<{ n: number }>(
          `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE application_name = 'corral' AND datname = 'corral_test'`,
        );
        killed += r.rows[0]!.n;
      }
      expect(killed).toBeGreaterThan(0);
      return writes;
    };
    const failure = { code: 'E_STORE', retryable: true };
    const intents = Array.from({ length: 200 }, (_, n) => intent({ intent_ns: at(n) }));
    const begun = await killWhile(Promise.allSettled(intents.map((i) => store.beginExecution(i))));
    for (const [n, s] of begun.entries()) {
      if (s.status === 'fulfilled') expect(await store.getExecution(intents[n]!.id)).toMatchObject({ status: 'interrupted' });
      else expect(s.reason).toMatchObject(failure);
    }
    // Most went through: a write that failed before its commit, or lost its COMMIT, was tried again on a new connection.
    const ids = intents.filter((_, n) => begun[n]!.status === 'fulfilled').map((i) => i.id);
    expect(ids.length).toBeGreaterThan(150);

    const result = (id: string) => new TextEncoder().encode(`{"result":"${id}"}`);
    const finished = await killWhile(Promise.allSettled(ids.map((id) => store.finishCall(id, outcome({ stdout_head: id }), result(id)))));
    for (const [n, s] of finished.entries()) {
      const id = ids[n]!;
      if (s.status === 'rejected') {
        expect(s.reason).toMatchObject(failure);
        continue;
      }
      // Each acknowledged call was finished by this one writer: true, with its outcome and result kept.
      expect(s.value).toBe(true);
      expect(await store.getExecution(id)).toMatchObject({ status: 'ok', stdout_head: id });
      expect(await store.getCallResult(id)).toEqual(result(id));
    }
    expect(finished.filter((s) => s.status === 'fulfilled').length).toBeGreaterThan(ids.length * 0.75);
    await store.close();
  });

  it('survives a server that ends a connection in the same packet that finished opening it', async () => {
    // A backend terminated while it starts up can send its FATAL right behind ReadyForQuery. pg hands the new
    // connection to the pool and reads that FATAL in one go, before the store gets the connection: a proxy
    // makes that happen on the first two connections, and the store's third try gets through.
    let injected = 0;
    const fatal = errorResponse('FATAL', '57P01', 'terminating connection due to administrator command');
    const proxy = createServer((client) => {
      const server = connect(cluster.port, '127.0.0.1');
      const inject = injected < 2;
      if (inject) injected++;
      let pending = Buffer.alloc(0);
      client.on('error', () => server.destroy());
      server.on('error', () => client.destroy());
      client.pipe(server);
      server.on('data', (chunk: Buffer) => {
        if (!inject) return void client.write(chunk);
        pending = Buffer.concat([pending, chunk]);
        const end = readyForQueryEnd(pending);
        if (end < 0) return;
        server.destroy();
        client.end(Buffer.concat([pending.subarray(0, end), fatal]));
      });
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = proxy.address() as AddressInfo;
      const through = url.replace(`:${cluster.port}/`, `:${port}/`);
      const schema = freshSchema();
      // In a child process: an unheard 'error' would end it, and this test would see the crash.
      const script = `
        import { PostgresStore } from '@corral/postgres';
        const store = await PostgresStore.open(${JSON.stringify(through)}, { schema: ${JSON.stringify(schema)}, maxConnections: 1 });
        await store.listExecutions();
        await store.close();
        console.log('alive');`;
      const ROOT = new URL('../../..', import.meta.url).pathname;
      const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT });
      expect(stdout.trim()).toBe('alive');
      expect(injected).toBe(2);
    } finally {
      await new Promise((resolve) => proxy.close(resolve));
    }
  });

  it('fails calls while the server is down without ending the process, and works again once it is back', async () => {
    const store = await PostgresStore.open(url, { schema: freshSchema(), connectTimeoutMs: 2000 });
    const before = intent({ intent_ns: at(1) });
    await store.beginExecution(before);
    await cluster.restart('fast');
    // The pooled connections died with the old server; the next call succeeds on a new one.
    const after = intent({ intent_ns: at(2) });
    await store.beginExecution(after);
    await store.finishExecution(before.id, outcome());
    expect((await store.listExecutions()).map((e) => [e.id, e.status])).toEqual([
      [after.id, 'interrupted'],
      [before.id, 'ok'],
    ]);
    await cluster.stop('immediate');
    try {
      await expect(store.getExecution(before.id)).rejects.toMatchObject({
        code: 'E_STORE',
        retryable: true,
        message: /cannot reach PostgreSQL/,
      });
      await expect(store.beginExecution(intent())).rejects.toMatchObject({ code: 'E_STORE', retryable: true });
    } finally {
      await cluster.start();
    }
    expect(await store.getExecution(before.id)).toMatchObject({ status: 'ok' });
    await store.finishExecution(after.id, outcome());
    expect(await store.getExecution(after.id)).toMatchObject({ status: 'ok' });
    await store.close();
  });
});

/** A backend ErrorResponse message. */
function errorResponse(severity: string, code: string, message: string): Buffer {
  const fields = Buffer.from(`S${severity}\0V${severity}\0C${code}\0M${message}\0\0`);
  const head = Buffer.alloc(5);
  head.write('E');
  head.writeInt32BE(4 + fields.length, 1);
  return Buffer.concat([head, fields]);
}

/** Where the first ReadyForQuery message in a server's bytes ends, or -1 before it has come whole. */
function readyForQueryEnd(bytes: Buffer): number {
  for (let at = 0; at + 5 <= bytes.length; ) {
    const end = at + 1 + bytes.readInt32BE(at + 1);
    if (end > bytes.length) return -1;
    if (bytes[at] === 0x5a) return end;
    at = end;
  }
  return -1;
}
