/**
 * One tool through a pool of 2 workers, no store, in this process: its
 * single-caller latency and its throughput with 8 callers, with the whole
 * process's CPU time per call. Small enough to run many times alternately
 * against another build (swap `packages/node/dist/worker.bundle.js`, or run
 * it from another checkout), which is how a change to the worker is told
 * apart from this machine's noise.
 *
 *   node bench/dist/pool-rate.js [tool] [calls]   (tool: diff-summary, echo, p1-echo, …)
 *
 * Prints one line of JSON.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BUNDLED_TOOLS_DIR, Corral } from '@corral/node';

const ROOT = new URL('../../', import.meta.url).pathname;
const tool = process.argv[2] ?? 'diff-summary';
const calls = Number(process.argv[3] ?? 10_000);
if (!Number.isInteger(calls) || calls < 100) throw new Error(`calls: an integer of at least 100, not ${process.argv[3]}`);

const corral = await Corral.create({
  size: 2,
  store: false,
  toolDirs: [join(ROOT, 'test/fixtures/tools'), join(ROOT, 'test/fixtures/preview1')],
});
const input =
  tool === 'diff-summary' ? JSON.parse(readFileSync(join(BUNDLED_TOOLS_DIR, 'diff-summary/examples/example.diff.json'), 'utf8')) : {};
const call = async () => {
  const result = await corral.invoke(tool, input);
  if (!result.ok) throw new Error(`${tool}: ${JSON.stringify(result.error)}`);
};
try {
  // Both workers compile the tool and warm up first.
  for (let i = 0; i < 300; i++) await Promise.all([call(), call()]);

  const latency: number[] = [];
  for (let i = 0; i < Math.min(calls, 3000); i++) {
    const started = performance.now();
    await call();
    latency.push(performance.now() - started);
  }
  latency.sort((a, b) => a - b);
  const at = (q: number) => Number(latency[Math.floor(q * (latency.length - 1))]!.toFixed(3));

  let next = 0;
  const cpu = process.cpuUsage();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next++ < calls) await call();
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  console.log(
    JSON.stringify({
      tool,
      p50Ms: at(0.5),
      p90Ms: at(0.9),
      callsPerSecond: Math.round(calls / seconds),
      cpuMicrosPerCall: Math.round((used.user + used.system) / calls),
    }),
  );
} finally {
  await corral.close();
}
