// An MCP client (the official SDK's) with roots it can change, and the files the MCP tests share.
import { cpSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { SqliteStore } from '@corral/node';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ListRootsRequestSchema, ToolListChangedNotificationSchema, type Root } from '@modelcontextprotocol/sdk/types.js';

export const ROOT = new URL('../..', import.meta.url).pathname;
export const CLI = join(ROOT, 'packages/node/bin/corral.js');
export const FIXTURE_TOOLS = join(ROOT, 'test/fixtures/tools');
/** What `corral mcp` lists with no --tools: every tool @corral/tools ships, by name. */
export const BUNDLED_NAMES = ['apply-patch', 'diff-summary', 'edit', 'file-stats', 'glob', 'grep', 'read'];
export const BUNDLED_SPECS = BUNDLED_NAMES.map(
  (name) => JSON.parse(readFileSync(join(ROOT, 'wasm-tools', name, 'tool-spec.json'), 'utf8')) as Record<string, unknown>,
);
export const EXAMPLE_DIFF = JSON.parse(readFileSync(join(ROOT, 'wasm-tools/diff-summary/examples/example.diff.json'), 'utf8')) as {
  diff: string;
};

export interface TestClient {
  client: Client;
  /** Resolves on the next notifications/tools/list_changed. */
  nextToolsChanged(timeoutMs?: number): Promise<void>;
  /** Replace the client's roots and tell the server (roots/list_changed). */
  setRoots(roots: Root[]): Promise<void>;
  /** How many roots/list requests the server sent. */
  rootsAsked(): number;
}

/**
 * Connect the SDK's Client over `transport`. With `roots` it declares the
 * roots capability (listChanged) and answers roots/list with them; without,
 * it declares no roots at all.
 */
export async function connectClient(transport: Transport, roots?: Root[]): Promise<TestClient> {
  const client = new Client({ name: 'corral-test', version: '1.0.0' }, { capabilities: roots ? { roots: { listChanged: true } } : {} });
  let current = roots ?? [];
  let asked = 0;
  if (roots) {
    client.setRequestHandler(ListRootsRequestSchema, async () => {
      asked++;
      return { roots: current };
    });
  }
  let waiters: Array<() => void> = [];
  client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
    const ready = waiters;
    waiters = [];
    for (const w of ready) w();
  });
  await client.connect(transport);
  return {
    client,
    nextToolsChanged(timeoutMs = 15_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no notifications/tools/list_changed')), timeoutMs);
        waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    },
    async setRoots(next) {
      current = next;
      await client.sendRootsListChanged();
    },
    rootsAsked: () => asked,
  };
}

export interface Workspace {
  dir: string;
  /** The client's root: a.txt, sub/b.txt, and `link`, a symlink to `outside`. */
  root: string;
  /** A folder next to the root, never shared: secret.txt. */
  outside: string;
  /** A folder a client may share as a second root, which the policy never grants: c.txt. */
  ungranted: string;
  /** An empty folder the server watches for tools. */
  tools: string;
  store: string;
  /** The server's policy file (written by makeWorkspace: file-stats may read `root` and `outside`). */
  policy: string;
  uri(path: string): string;
  /** Replace the policy file. */
  writePolicy(policy: object): void;
  cleanup(): void;
}

/** What the MCP scenarios need granted: file-stats may read the client's root, and `outside` (a root some tests switch to). */
export function scenarioPolicy(w: Pick<Workspace, 'root' | 'outside'>): object {
  return {
    version: 1,
    tools: {
      'file-stats': {
        mounts: {
          '/workspace': [
            { folder: w.root, access: 'read' },
            { folder: w.outside, access: 'read' },
          ],
        },
      },
    },
  };
}

export function makeWorkspace(): Workspace {
  // Real paths: the policy compares folders as the OS resolves them.
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'corral-mcp-')));
  const root = join(dir, 'root');
  const outside = join(dir, 'outside');
  const ungranted = join(dir, 'ungranted');
  const tools = join(dir, 'tools');
  mkdirSync(join(root, 'sub'), { recursive: true });
  mkdirSync(outside);
  mkdirSync(ungranted);
  mkdirSync(tools);
  writeFileSync(join(root, 'a.txt'), 'hello world\n');
  writeFileSync(join(root, 'sub', 'b.txt'), 'one two three\n');
  writeFileSync(join(outside, 'secret.txt'), 'do not read\n');
  writeFileSync(join(ungranted, 'c.txt'), 'not granted\n');
  symlinkSync(outside, join(root, 'link'));
  const policy = join(dir, 'policy.yaml');
  // JSON is YAML too.
  const writePolicy = (p: object) => writeFileSync(policy, JSON.stringify(p, null, 2));
  writePolicy(scenarioPolicy({ root, outside }));
  return {
    dir,
    root,
    outside,
    ungranted,
    tools,
    store: join(dir, 'snapshots.db'),
    policy,
    uri: (path) => pathToFileURL(path).href,
    writePolicy,
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** Copy a fixture tool's folder into `dest` the way a user would (cp -r). */
export function copyFixtureTool(name: string, dest: string): string {
  const target = join(dest, name);
  cpSync(join(FIXTURE_TOOLS, name), target, { recursive: true });
  return target;
}

/** Read a server's SQLite store from outside it, read-only, as `corral snapshots` would. */
export async function readStore<T>(path: string, read: (store: SqliteStore) => Promise<T>): Promise<T> {
  const store = await SqliteStore.open(path, { readonly: true });
  try {
    return await read(store);
  } finally {
    await store.close();
  }
}
