/**
 * One end-to-end pass through the Node host, run as-is by Node, Bun and Deno
 * (portability.test.ts spawns it under each and compares the answers).
 * Prints one JSON object: what a user of @corral/node would check.
 * argv[2]: a scratch folder (made and removed by the caller).
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Corral } from '@corral/node';

const ROOT = new URL('../../', import.meta.url).pathname;
const TOOLS = join(ROOT, 'test/fixtures/tools');
const EXAMPLE = join(ROOT, 'wasm-tools/diff-summary/examples/example.diff.json');
const scratch = process.argv[2];
const out = {};
const error = (r) => (r.ok ? null : { code: r.error.code, details: r.error.details });

// What Corral warns about on this runtime (limits it cannot enforce).
const warnings = [];
process.on('warning', (w) => {
  if (w.code === 'CORRAL_UNENFORCED_LIMIT') warnings.push(w.message);
});

// The SQLite store where the runtime can load it; else its refusal, and no store.
const toolDirs = [join(TOOLS, 'spin'), join(TOOLS, 'fs-writer')];
let corral;
try {
  corral = await Corral.create({ size: 1, store: join(scratch, 'snapshots.db'), toolDirs });
} catch (err) {
  out.storeRefused = { code: err.code, details: err.details, message: err.message };
  corral = await Corral.create({ size: 1, store: false, toolDirs });
}
try {
  const summary = await corral.invoke('diff-summary', JSON.parse(readFileSync(EXAMPLE, 'utf8')));
  out.diffSummary = { ok: summary.ok, output: summary.output, error: error(summary) };

  // A read mount: file-stats sees the folder's files.
  const ro = join(scratch, 'ro');
  mkdirSync(ro);
  writeFileSync(join(ro, 'a.txt'), 'one\ntwo\n');
  writeFileSync(join(ro, 'b.md'), '# b\n');
  const stats = await corral.invoke(
    'file-stats',
    {},
    { mounts: [{ guest: '/workspace', access: 'read', source: { kind: 'host', path: ro } }] },
  );
  out.mountRead = { ok: stats.ok, output: stats.output, error: error(stats) };

  // A read-write mount: fs-writer creates, appends, renames and deletes; the host sees it.
  const rw = join(scratch, 'rw');
  mkdirSync(rw);
  writeFileSync(join(rw, 'existing.txt'), 'kept\n');
  writeFileSync(join(rw, 'doomed.txt'), 'gone\n');
  const wrote = await corral.invoke(
    'fs-writer',
    {},
    { mounts: [{ guest: '/workspace', access: 'read-write', source: { kind: 'host', path: rw } }] },
  );
  out.mountWrite = {
    ok: wrote.ok,
    output: wrote.output,
    error: error(wrote),
    files: readdirSync(rw).sort(),
    renamed: readFileSync(join(rw, 'renamed.txt'), 'utf8'),
    created: readFileSync(join(rw, 'new.txt'), 'utf8'),
  };

  // A read mount refuses the same writes, and the folder stays as it was.
  const before = readdirSync(ro).sort();
  const refused = await corral.invoke(
    'fs-writer',
    {},
    { mounts: [{ guest: '/workspace', access: 'read', source: { kind: 'host', path: ro } }] },
  );
  out.mountWriteRefused = {
    ok: refused.ok,
    output: refused.output,
    unchanged: JSON.stringify(readdirSync(ro).sort()) === JSON.stringify(before),
  };

  // A tool that never returns: its worker is killed at the limit, and the next call still runs.
  const spun = await corral.invoke('spin', {}, { timeoutMs: 300 });
  const after = await corral.invoke('diff-summary', { diff: '' });
  out.timeout = { code: spun.error?.code ?? null, details: spun.error?.details ?? null, nextCallOk: after.ok };

  // The store kept the call: read it back by id.
  if (corral.store) {
    const record = await corral.store.getExecution(summary.snapshot.id);
    out.store = record && { tool: record.tool, status: record.status, exit_code: record.exit_code, stdout_head: record.stdout_head };
    out.storeStdoutIsOutput = record !== null && JSON.stringify(JSON.parse(record.stdout_head)) === JSON.stringify(summary.output);
  }
} catch (err) {
  out.thrown = { code: err?.code ?? null, message: String(err?.message ?? err) };
} finally {
  await corral.close();
}

// The CLI, started by the same runtime: recording to a store, then without one.
const corralJs = join(ROOT, 'packages/node/bin/corral.js');
for (const [key, flags] of [
  ['cli', ['--store', join(scratch, 'cli.db')]],
  ['cliNoStore', ['--no-store']],
]) {
  const cli = spawnSync(process.execPath, [...cliArgs(), corralJs, 'run', 'diff-summary', '--input-file', EXAMPLE, ...flags], {
    encoding: 'utf8',
  });
  out[key] = { status: cli.status, stdout: cli.stdout, stderr: cli.stderr };
}
out.warnings = warnings;

out.runtime = { bun: process.versions.bun ?? null, deno: process.versions.deno ?? null };
process.stdout.write(JSON.stringify(out));
// Bun may never exit by itself while the thread of a timed-out tool still
// spins (PORTABILITY.md); the answers are written, so end here.
process.exit(0);

/** What the runtime needs before a script path to run it like `node SCRIPT`. */
function cliArgs() {
  return typeof globalThis.Deno === 'object' ? ['run', '-A'] : [];
}
