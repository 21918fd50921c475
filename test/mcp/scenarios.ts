// What an MCP client must see from Corral, whatever the transport: stdio.test.ts, http.test.ts and serve.test.ts
// run these, each server with the workspace's policy file (file-stats may read the root and `outside`).
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditEvent, ExecutionSnapshot } from '@corral/node';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { BUNDLED_NAMES, BUNDLED_SPECS, EXAMPLE_DIFF, copyFixtureTool, type TestClient, type Workspace } from './helpers.js';

export interface ServerUnderTest {
  workspace: Workspace;
  /** A new client connection; with `roots`, a client that declares the roots capability. */
  connect(roots?: string[]): Promise<TestClient>;
  /** The execution snapshot the server recorded, read from its store. */
  snapshot(id: string): Promise<ExecutionSnapshot | null>;
  /** The audit trail in the server's store, newest first. */
  audit(): Promise<AuditEvent[]>;
  close(): Promise<void>;
}

type Result = CallToolResult & { _meta?: Record<string, unknown> };

const text = (result: Result) => (result.content[0] as { type: 'text'; text: string }).text;
const errorOf = (result: Result) => result._meta?.['corral/error'] as { code: string; message: string; details: Record<string, unknown> };

export function mcpScenarios(label: string, start: () => Promise<ServerUnderTest>): void {
  describe(label, () => {
    let sut: ServerUnderTest;
    let withRoots: TestClient;
    let noRoots: TestClient;

    beforeAll(async () => {
      sut = await start();
      withRoots = await sut.connect([sut.workspace.root, sut.workspace.ungranted]);
      noRoots = await sut.connect();
    });
    afterAll(async () => {
      await withRoots?.client.close();
      await noRoots?.client.close();
      await sut?.close();
      sut?.workspace.cleanup();
    });

    it('lists every tool once, by name, with its spec schemas unchanged', async () => {
      const { tools } = await noRoots.client.listTools();
      expect(tools.map((t) => t.name)).toEqual(BUNDLED_NAMES);
      for (const spec of BUNDLED_SPECS) {
        const tool = tools.find((t) => t.name === spec.name)!;
        expect(tool.inputSchema).toEqual(spec.input_schema);
        expect(tool.outputSchema).toEqual(spec.output_schema);
        expect(tool.description).toBe(spec.description);
        expect(tool._meta).toMatchObject({ 'corral/version': spec.version, 'corral/declared-mounts': spec.mounts });
        // A tool that may write (a read-write mount: edit, apply-patch) is not read-only to a client.
        const writes = ((spec.mounts ?? []) as { access: string }[]).some((m) => m.access === 'read-write');
        expect(tool.annotations).toEqual({ readOnlyHint: !writes, openWorldHint: false });
      }
    });

    it('calls diff-summary: structuredContent matches its output schema, a JSON copy in text, and the call is recorded', async () => {
      await noRoots.client.listTools(); // the SDK client checks structuredContent against outputSchema only after listing
      const result = (await noRoots.client.callTool({ name: 'diff-summary', arguments: EXAMPLE_DIFF })) as Result;
      expect(result.isError).toBeFalsy();
      const spec = BUNDLED_SPECS.find((s) => s.name === 'diff-summary')!;
      const validate = new Ajv({ allErrors: true, strict: false }).compile(spec.output_schema as object);
      expect(validate(result.structuredContent), JSON.stringify(validate.errors)).toBe(true);
      expect(JSON.parse(text(result))).toEqual(result.structuredContent);
      expect(result.structuredContent).toMatchObject({ totals: { files: 3 } });
      const ref = result._meta?.['corral/snapshot'] as { id: string; error?: string };
      expect(ref.error).toBeUndefined();
      const snapshot = await sut.snapshot(ref.id);
      expect(snapshot).toMatchObject({ tool: 'diff-summary', version: '1.1.0', status: 'ok', exit_code: 0 });
    });

    it('bad input is an isError result with E_INPUT_VALIDATION, and no structuredContent', async () => {
      const result = (await noRoots.client.callTool({ name: 'diff-summary', arguments: { diff: 5 } })) as Result;
      expect(result.isError).toBe(true);
      expect(text(result)).toMatch(/^E_INPUT_VALIDATION: .*\/diff: must be string/);
      expect(result.structuredContent).toBeUndefined();
      expect(errorOf(result)).toMatchObject({ code: 'E_INPUT_VALIDATION', details: { problems: [{ path: '/diff' }] } });
      const missing = (await noRoots.client.callTool({ name: 'diff-summary' })) as Result;
      expect(text(missing)).toMatch(/^E_INPUT_VALIDATION: .*must have required property 'diff'/);
    });

    it('an unknown tool is a JSON-RPC error (InvalidParams), not a result', async () => {
      for (const name of ['no-such-tool', 'diff-summary@^1', 'Diff-Summary', 'x'.repeat(10_000)]) {
        const err = await noRoots.client.callTool({ name, arguments: {} }).then(
          () => undefined,
          (e: unknown) => e as { code: number; message: string; data?: unknown },
        );
        expect(err, name.slice(0, 40)).toMatchObject({ code: -32602, data: { code: 'E_TOOL_NOT_FOUND' } });
        expect(err!.message.length).toBeLessThan(300);
      }
    });

    it('a tool folder copied into a watched folder is announced and callable; removing it takes it away', async () => {
      const { client, nextToolsChanged } = withRoots;
      const added = nextToolsChanged();
      const folder = copyFixtureTool('echo', sut.workspace.tools);
      await added;
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual([...BUNDLED_NAMES, 'echo'].sort());
      const echoed = (await client.callTool({ name: 'echo', arguments: { hello: 'world' } })) as Result;
      expect(echoed.isError).toBeFalsy();
      expect(echoed.structuredContent).toEqual({ hello: 'world' });

      const removed = nextToolsChanged();
      rmSync(folder, { recursive: true });
      await removed;
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(BUNDLED_NAMES);
      await expect(client.callTool({ name: 'echo', arguments: {} })).rejects.toMatchObject({ code: -32602 });
    });

    it('a broken tool in a watched folder is skipped; the others keep working', async () => {
      const folder = copyFixtureTool('not-wasm', sut.workspace.tools);
      // Give the watcher time to read it; nothing was added, so nothing is announced.
      await new Promise((r) => setTimeout(r, 800));
      expect((await noRoots.client.listTools()).tools.map((t) => t.name)).toEqual(BUNDLED_NAMES);
      rmSync(folder, { recursive: true });
      const ok = (await noRoots.client.callTool({ name: 'diff-summary', arguments: { diff: '' } })) as Result;
      expect(ok.isError).toBeFalsy();
    });

    describe('mounts bind only inside the client roots', () => {
      const paths = (result: Result) => (result.structuredContent as { files: Array<{ path: string }> }).files.map((f) => f.path).sort();
      const statsIn = (client: TestClient, mounts?: Record<string, unknown>) =>
        client.client.callTool({
          name: 'file-stats',
          arguments: {},
          ...(mounts ? { _meta: { 'corral/mounts': mounts } } : {}),
        }) as Promise<Result>;

      it('a tool with a mount sees the first root by default, or a folder inside a root', async () => {
        const whole = await statsIn(withRoots);
        expect(whole.isError, text(whole)).toBeFalsy();
        expect(paths(whole)).toEqual(['/workspace/a.txt', '/workspace/sub/b.txt']);
        const sub = await statsIn(withRoots, { '/workspace': sut.workspace.uri(join(sut.workspace.root, 'sub')) });
        expect(paths(sub)).toEqual(['/workspace/b.txt']);
      });

      it('a folder outside the roots is refused, however it is spelled', async () => {
        const { root, outside, uri } = sut.workspace;
        for (const target of [
          uri(outside),
          uri(join(root, 'link')), // a symlink inside the root, leading out of it
          `${uri(root)}/../outside`, // '..' after the root
          `${uri(root)}/sub/%2E%2E/%2E%2E/outside`, // '..' percent-encoded
          'file:///',
        ]) {
          const result = await statsIn(withRoots, { '/workspace': target });
          expect(result.isError, target).toBe(true);
          expect(text(result)).toMatch(/^E_INPUT_VALIDATION: Mount \/workspace of file-stats: .* is outside the client's roots/);
          expect(errorOf(result).details).toMatchObject({ reason: 'outside_roots' });
        }
      });

      it('a folder in the roots that the policy does not grant is refused (E_POLICY_DENIED), and the refusal is recorded', async () => {
        const result = await statsIn(withRoots, { '/workspace': sut.workspace.uri(sut.workspace.ungranted) });
        expect(result.isError).toBe(true);
        expect(text(result)).toMatch(/^E_POLICY_DENIED: The policy .* does not let file-stats@1\.0\.0 mount .*ungranted at \/workspace/);
        expect(errorOf(result)).toMatchObject({
          code: 'E_POLICY_DENIED',
          details: { reason: 'not_granted', folder: sut.workspace.ungranted, policy: sut.workspace.policy },
        });
        const [denial] = (await sut.audit()).filter((e) => e.action === 'deny' && e.detail.reason === 'not_granted');
        expect(denial).toMatchObject({ actor: 'mcp:corral-test', tool: 'file-stats' });
      });

      it('a refusal before the policy decides (outside the roots) is recorded too', async () => {
        const result = await statsIn(withRoots, { '/workspace': sut.workspace.uri(sut.workspace.outside) });
        expect(errorOf(result).details).toMatchObject({ reason: 'outside_roots' });
        const denials = (await sut.audit()).filter((e) => e.action === 'deny' && e.detail.reason === 'outside_roots');
        expect(denials.length).toBeGreaterThan(0);
        expect(denials[0]).toMatchObject({
          actor: 'mcp:corral-test',
          tool: 'file-stats',
          detail: { bindings: { '/workspace': { folder: sut.workspace.uri(sut.workspace.outside) } } },
        });
      });

      it('a malformed or undeclared mount request is refused', async () => {
        const refusals: Array<[unknown, string]> = [
          [{ '/etc': sut.workspace.uri(sut.workspace.root) }, 'undeclared_mount'],
          [{ '/workspace': 'http://example.com/x' }, 'bad_mounts_meta'],
          [{ '/workspace': 42 }, 'bad_mounts_meta'],
          [{ '/workspace': `file://${'a'.repeat(5000)}` }, 'bad_mounts_meta'],
          [['file:///'], 'bad_mounts_meta'],
          [Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`/m${i}`, 'file:///'])), 'bad_mounts_meta'],
          [{ '/workspace': sut.workspace.uri(join(sut.workspace.root, 'missing')) }, 'not_a_folder'],
          [{ '/workspace': sut.workspace.uri(join(sut.workspace.root, 'a.txt')) }, 'not_a_folder'],
        ];
        for (const [mounts, reason] of refusals) {
          const result = await statsIn(withRoots, mounts as Record<string, unknown>);
          expect(result.isError, reason).toBe(true);
          expect(errorOf(result)).toMatchObject({ code: 'E_INPUT_VALIDATION', details: { reason } });
        }
      });

      it('a client without roots cannot run tools with mounts; tools without mounts still run', async () => {
        const refused = await statsIn(noRoots);
        expect(refused.isError).toBe(true);
        expect(text(refused)).toMatch(
          /^E_INPUT_VALIDATION: file-stats needs a folder for \/workspace, and this client exposes no MCP roots/,
        );
        const ok = (await noRoots.client.callTool({ name: 'diff-summary', arguments: { diff: '' } })) as Result;
        expect(ok.isError).toBeFalsy();
      });

      it('follows the client when its roots change', async () => {
        const { root, outside, uri } = sut.workspace;
        const before = withRoots.rootsAsked();
        await withRoots.setRoots([{ uri: uri(outside), name: 'outside' }]);
        // The notice is one-way: give the server a moment to drop what it cached.
        await new Promise((r) => setTimeout(r, 100));
        const now = await statsIn(withRoots);
        expect(paths(now)).toEqual(['/workspace/secret.txt']);
        expect(withRoots.rootsAsked()).toBe(before + 1);
        const old = await statsIn(withRoots, { '/workspace': uri(root) });
        expect(errorOf(old).details).toMatchObject({ reason: 'outside_roots' });
        await withRoots.setRoots([]);
        await new Promise((r) => setTimeout(r, 100));
        expect(text(await statsIn(withRoots))).toMatch(/list of roots is empty/);
        await withRoots.setRoots([{ uri: uri(root) }]);
      });
    });
  });
}
