// A client process for test/fleet/faults.test.ts: a real Corral whose invoke
// pipeline sends every call to the fleet (remote()), submitting COUNT calls of
// the `mark` fixture spread over SPREAD_MS, at most IN_FLIGHT at once, and
// printing one JSON line per answer. Each call's input is unique (client and
// index), so the parent finds it in PostgreSQL by its input.
//
// Usage: node fault-client.mjs NATS_URL TOOLS_DIR CLIENT COUNT SPREAD_MS IN_FLIGHT SEED
import { createHash } from 'node:crypto';
import { Corral } from '@corral/node';
import { remote } from '@corral/fleet';

const [natsUrl, toolsDir, clientArg, countArg, spreadArg, inFlightArg, seedArg] = process.argv.slice(2);
const client = Number(clientArg);
const count = Number(countArg);
const spreadMs = Number(spreadArg);
const inFlight = Number(inFlightArg);

// mulberry32: the same seed gives the same inputs and pacing.
let state = (Number(seedArg) ^ (client * 0x9e3779b9)) >>> 0;
const random = () => {
  state = (state + 0x6d2b79f5) >>> 0;
  let t = state;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};

const corral = await Corral.create({
  bundled: false,
  toolDirs: [toolsDir],
  store: false,
  executor: remote({ servers: natsUrl, queueTimeoutMs: 20_000 }),
});
// Pipes are written synchronously on Linux: a line printed is a line the parent gets.
const say = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);
say({ ready: true });

const started = Date.now();
let running = 0;
let wake = () => {};
const calls = [];
for (let i = 0; i < count; i++) {
  const at = started + (i / count) * spreadMs;
  while (Date.now() < at) await new Promise((r) => setTimeout(r, at - Date.now()));
  while (running >= inFlight) await new Promise((r) => (wake = r));
  running++;
  const input = { client, i, spin_ms: Math.floor(random() * 30) };
  const t0 = Date.now();
  calls.push(
    corral
      .invoke('mark', input, { mounts: [{ guest: '/workspace', access: 'read-write' }] })
      .then(
        (r) => {
          const line = { c: client, i, at: t0, ms: Date.now() - t0, ok: r.ok };
          if (r.ok) {
            // mark prints its input back: anything else is a wrong answer, not just a failed call.
            const same = r.output?.client === client && r.output?.i === i && !r.stdout_truncated;
            Object.assign(line, { same, sha: createHash('sha256').update(r.stdout_head, 'utf8').digest('hex') });
          } else Object.assign(line, { code: r.error?.code ?? null, reason: r.error?.details?.reason ?? null, message: r.error?.message });
          say(line);
        },
        // invoke answers with an envelope; a thrown error is a finding of its own.
        (err) => say({ c: client, i, at: t0, ms: Date.now() - t0, ok: false, threw: String(err?.stack ?? err) }),
      )
      .finally(() => {
        running--;
        wake();
      }),
  );
}
await Promise.all(calls);
await corral.close();
say({ done: true, ms: Date.now() - started });
