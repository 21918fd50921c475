// Child process for test/snapshots-crash.test.ts: runs echo invocations on
// several lanes at once and prints "ack <snapshot id> <seq>" after each call
// returns. The parent SIGKILLs it at random moments and checks the store.
//
// Usage: node snapshot-child.mjs STORE TOOLS_DIR LANES MODE
//   MODE corral:  the real Corral (worker pool running echo.wasm, SQLite store)
//   MODE runtime: the real Runtime and SQLite store, with an in-process
//                 executor that echoes after 0–3 ms (no worker to boot, so a
//                 round is cheaper and more kills fit in the test's time)
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Corral, Registry, Runtime, SqliteStore } from '@corral/node';

const [storePath, toolsDir, lanes, mode] = process.argv.slice(2);

let invoke;
if (mode === 'corral') {
  const corral = await Corral.create({ bundled: false, toolDirs: [toolsDir], store: storePath, size: 1 });
  invoke = (input) => corral.invoke('echo', input);
} else {
  const registry = new Registry();
  const dir = join(toolsDir, 'echo');
  await registry.register(JSON.parse(readFileSync(join(dir, 'tool-spec.json'), 'utf8')), readFileSync(join(dir, 'echo.wasm')));
  const executor = {
    async execute(request) {
      await new Promise((r) => setTimeout(r, Math.random() * 3));
      return { exitCode: 0, stdout: request.stdin, stderr: new Uint8Array(), durationMs: 1 };
    },
  };
  const runtime = new Runtime({ registry, executor, store: await SqliteStore.open(storePath) });
  invoke = (input) => runtime.invoke('echo', input);
}
process.stdout.write('ready\n');

let next = 0;
async function lane() {
  for (;;) {
    const seq = next++;
    const r = await invoke({ seq, pad: 'x'.repeat((seq % 7) * 150) });
    if (!r.ok || !r.snapshot || r.snapshot.error) {
      process.stdout.write(`fail ${JSON.stringify(r)}\n`);
      process.exit(3);
    }
    // Pipes are written synchronously on Linux: once this returns, the parent sees it even if we die next.
    process.stdout.write(`ack ${r.snapshot.id} ${seq}\n`);
  }
}
await Promise.all(Array.from({ length: Number(lanes) }, lane));
