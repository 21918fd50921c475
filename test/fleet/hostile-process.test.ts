// A real `corral worker` process under a barrage of hostile messages from
// anyone who can publish on its NATS server: absurd framing, deep nesting,
// too many nodes, giant headers (the server stops them at 64 KiB), reply subjects outside the inboxes, a
// cancel flood, odd limits and names. An unhandled error would kill the
// process; it must refuse each, stay up, and keep serving.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Corral } from '@corral/node';
import { CALLS_PREFIX, CANCEL_PREFIX, HEADER_KEY, HEADER_REPLY, STREAM, encodeCall, remote } from '@corral/fleet';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, createInbox, headers, type NatsConnection } from '@nats-io/transport-node';
import { startNats, type NatsServer } from '../helpers/nats.js';
import { callFor } from '../helpers/fleet-calls.js';

const CLI = fileURLToPath(new URL('../../packages/node/bin/corral.js', import.meta.url));
const FIXTURES = fileURLToPath(new URL('../fixtures/tools/', import.meta.url));

let nats: NatsServer;
let nc: NatsConnection;
let client: Corral;
let child: ChildProcess | undefined;
let stderr = '';

beforeAll(async () => {
  nats = await startNats();
  nc = await connect({ servers: nats.url });
  client = await Corral.create({
    bundled: false,
    toolDirs: [FIXTURES],
    store: false,
    executor: remote({ servers: nats.url, queueTimeoutMs: 60_000 }),
  });
}, 60_000);

afterAll(async () => {
  if (child && child.exitCode === null) {
    const exited = new Promise((r) => child!.once('exit', r));
    child.kill('SIGKILL');
    await exited;
  }
  await client?.close();
  await nc?.close();
  await nats?.stop();
});

const enc = new TextEncoder();

/** A call frame by hand: magic, a meta length (the real one unless told), meta text, blobs. */
function frame(meta: string, blobs: Uint8Array[] = [], metaLength?: number): Uint8Array {
  const json = enc.encode(meta);
  const size = blobs.reduce((n, b) => n + b.length, 8 + json.length);
  const out = new Uint8Array(size);
  out.set([0x43, 0x46, 0x43, 1]);
  new DataView(out.buffer).setUint32(4, metaLength ?? json.length);
  out.set(json, 8);
  let at = 8 + json.length;
  for (const b of blobs) {
    out.set(b, at);
    at += b.length;
  }
  return out;
}

async function publish(tool: string, body: Uint8Array, h: Record<string, string>): Promise<void> {
  const hs = headers();
  for (const [k, v] of Object.entries(h)) hs.set(k, v);
  await jetstream(nc).publish(`${CALLS_PREFIX}${tool}`, body, { headers: hs });
}

describe('corral worker under hostile messages', () => {
  it('refuses every one, stays up, keeps serving, and logs no raw terminal escapes', async () => {
    child = spawn(process.execPath, [CLI, 'worker', '--nats', nats.url, '--no-bundled', '--tools', FIXTURES, '--workers', '1'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout!.setEncoding('utf8').on('data', (s: string) => (stdout += s));
    child.stderr!.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    const until = async (what: string, check: () => boolean) => {
      for (let i = 0; i < 1200 && !check(); i++) {
        if (child!.exitCode !== null) throw new Error(`the worker exited (${child!.exitCode}) waiting for ${what}:\n${stderr}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      if (!check()) throw new Error(`timed out waiting for ${what}`);
    };
    await until('the worker to be ready', () => stdout.includes('worker ready'));

    const inbox = createInbox();
    const ok = () => ({ [HEADER_KEY]: crypto.randomUUID(), [HEADER_REPLY]: `${inbox}.${crypto.randomUUID().slice(0, 8)}` });
    const echo = callFor(client.registry, 'echo', { hostile: true });
    const meta = (over: Record<string, unknown>) => {
      const { stdin: _s, ...rest } = echo;
      return JSON.stringify({ ...rest, stdin: 0, blobs: [echo.stdin.length], ...over });
    };
    // A folder tree of 110,000 entries (past the 100,000 bound), under 1 MB.
    const wide: Record<string, Record<string, object>> = {};
    for (let f = 0; f < 100; f++) {
      const folder: Record<string, object> = {};
      for (let i = 0; i < 1100; i++) folder[i.toString(36)] = {};
      wide[f.toString(36)] = folder;
    }
    const hostile: [string, Uint8Array, Record<string, string>][] = [
      ['echo', frame('{}', [], 0xffffffff), ok()],
      ['echo', frame('['.repeat(200_000)), ok()],
      ['echo', frame(JSON.stringify({ blobs: [2 ** 53 - 1] })), ok()],
      ['echo', frame(JSON.stringify({ blobs: new Array(120_000).fill(0) })), ok()],
      ['echo', frame(meta({ mounts: [{ guest: '/x', access: 'read', tree: wide }] }), [echo.stdin]), ok()],
      ['echo', frame(meta({ env: { ['__proto__']: 'x', PATH: '/evil' } }), [echo.stdin]), ok()],
      ['echo', frame(meta({ timeout_ms: 1e300 }), [echo.stdin]), ok()],
      ['echo', encodeCall({ ...echo, memory_limit_bytes: 1, timeout_ms: 1, output_limit_bytes: 0, disk_limit_bytes: 0 }), ok()],
      ['echo', encodeCall({ ...echo, stdin: new Uint8Array([0xff, 0xfe, 0]) }), ok()],
      [
        'mark',
        encodeCall({
          ...callFor(client.registry, 'mark', {}),
          mounts: [{ guest: '/workspace', access: 'read-write', tree: { '\u001b]0;pwned\u0007\u001b[2J': 'x', sub: { 'a\nb': 'y' } } }],
        }),
        ok(),
      ],
      ['echo', encodeCall(echo), { [HEADER_KEY]: 'k'.repeat(60_000), [HEADER_REPLY]: `${inbox}.big` }],
      ['echo', encodeCall(echo), { [HEADER_KEY]: crypto.randomUUID(), [HEADER_REPLY]: `$JS.API.STREAM.DELETE.${STREAM}` }],
      ['echo', encodeCall(echo), { [HEADER_KEY]: crypto.randomUUID(), [HEADER_REPLY]: '_INBOX.>' }],
      ['echo', encodeCall(echo), { [HEADER_KEY]: crypto.randomUUID(), [HEADER_REPLY]: `${CALLS_PREFIX}echo` }],
      ['echo', new Uint8Array(0), {}],
    ];
    for (const [tool, body, h] of hostile) await publish(tool, body, h);
    for (let i = 0; i < 30_000; i++) nc.publish(`${CANCEL_PREFIX}${i % 2 ? crypto.randomUUID() : `x${i}`}`, enc.encode('junk'));
    await nc.flush();

    // Still there, and serving: the stream was not deleted, a real call is answered.
    const r = await client.invoke('echo', { after: 'the barrage' });
    expect(r).toMatchObject({ ok: true, output: { after: 'the barrage' } });
    const jsm = await jetstreamManager(nc);
    expect((await jsm.streams.info(STREAM)).config.name).toBe(STREAM);
    expect(child.exitCode).toBeNull();
    const events = stderr
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { event: string });
    expect(events.filter((e) => e.event === 'refused').length).toBeGreaterThanOrEqual(11);
    // The log is JSON lines: whatever a message carried, no raw escape reaches a terminal that tails it.
    const control = [...stderr].filter((c) => c !== '\n' && (c < ' ' || c === '\u007f'));
    expect(control).toEqual([]);
  }, 120_000);
});
