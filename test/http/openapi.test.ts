// GET /openapi.json: generated from the registered tools, valid OpenAPI 3.1
// for a real validator, and true to what the server answers.
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SwaggerParser from '@apidevtools/swagger-parser';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXAMPLE_DIFF, FIXTURES, execute, send, startTestServer, type TestServer } from './helpers.js';

const TOKEN = 'openapi-test-token-0123456789';
const example = JSON.parse(readFileSync(EXAMPLE_DIFF, 'utf8')) as { diff: string };

/** Two tools whose schemas use local $refs, 2020-12 ($defs) and draft-07 (definitions); both run echo.wasm. */
function refToolsDir(): string {
  const root = mkdtempSync(join(tmpdir(), 'corral-openapi-tools-'));
  const item = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'], additionalProperties: false };
  const tools = {
    'echo-refs': {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      $id: 'https://example.test/echo-refs.json',
      type: 'object',
      properties: { item: { $ref: '#/$defs/item' }, list: { type: 'array', items: { $ref: '#/$defs/item' } } },
      required: ['item'],
      $defs: { item },
    },
    'echo.draft7': {
      type: 'object',
      properties: { item: { $ref: '#/definitions/item' }, tag: { type: 'string', default: '#/definitions/item' } },
      required: ['item'],
      definitions: { item },
    },
  };
  for (const [name, schema] of Object.entries(tools)) {
    const dir = join(root, name);
    mkdirSync(dir);
    copyFileSync(join(FIXTURES, 'echo/echo.wasm'), join(dir, 'echo.wasm'));
    writeFileSync(
      join(dir, 'tool-spec.json'),
      JSON.stringify({
        name,
        version: '2.0.0',
        description: 'Echoes its input. Its schemas use $ref.',
        component: 'echo.wasm',
        input_schema: schema,
        output_schema: schema,
        resources: { timeout_ms: 5000 },
      }),
    );
  }
  return root;
}

let open: TestServer;
let authed: TestServer;
beforeAll(async () => {
  open = await startTestServer({}, [refToolsDir()]);
  authed = await startTestServer({ token: TOKEN });
});
afterAll(async () => {
  await open?.stop();
  await authed?.stop();
});

async function documentOf(t: TestServer, headers: Record<string, string> = {}) {
  const r = await send(t.url, '/openapi.json', { headers });
  expect(r.status).toBe(200);
  expect(r.headers['content-type']).toBe('application/json; charset=utf-8');
  return r.json;
}

describe('GET /openapi.json', () => {
  it('validates as OpenAPI 3.1 with @apidevtools/swagger-parser, refs included', async () => {
    const doc = await documentOf(open);
    expect(doc.openapi).toBe('3.1.0');
    await expect(SwaggerParser.validate(structuredClone(doc))).resolves.toMatchObject({
      openapi: '3.1.0',
      paths: expect.objectContaining({ '/execute': expect.any(Object) }),
    });
    // Every $ref resolves: the dereferenced document has none left.
    const deref = await SwaggerParser.dereference(structuredClone(doc));
    expect(
      JSON.stringify(deref, (_k, v) => (v && typeof v === 'object' && '$ref' in v && typeof v.$ref === 'string' ? 'REF' : v)),
    ).not.toContain('"REF"');
  });

  it('has one typed operation per tool, with its own input and output schemas, and the generic /execute', async () => {
    const doc = await documentOf(open);
    const tools = (await send(open.url, '/tools')).json.tools as Array<{ name: string; input_schema: unknown; output_schema?: unknown }>;
    const names = [...new Set(tools.map((t) => t.name))];
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining(['/execute', ...names.map((n) => `/execute/${n}`), '/tools', '/healthz']),
    );
    const op = doc.paths['/execute/diff-summary'].post;
    expect(op.operationId).toBe('executeDiffSummary');
    expect(op.requestBody.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/DiffSummaryRequest' });
    const diffSpec = tools.find((t) => t.name === 'diff-summary')!;
    expect(doc.components.schemas.DiffSummaryInput).toEqual(diffSpec.input_schema);
    expect(doc.components.schemas.DiffSummaryOutput).toEqual(diffSpec.output_schema);
    // A call may shorten the tool's limit, not lengthen it: the schema says so.
    expect(doc.components.schemas.DiffSummaryRequest.properties.timeout_ms).toMatchObject({ minimum: 1, maximum: 10_000 });
    const ids = Object.values(doc.paths).flatMap((item) =>
      Object.values(item as Record<string, { operationId: string }>).map((o) => o.operationId),
    );
    expect(new Set(ids).size).toBe(ids.length);
    expect(doc.paths['/execute/echo.draft7'].post.operationId).toBe('executeEchoDraft7');
    // The status codes documented on /execute.
    expect(Object.keys(doc.paths['/execute'].post.responses).sort()).toEqual([
      '200',
      '202',
      '400',
      '403',
      '404',
      '413',
      '415',
      '422',
      '500',
      '503',
    ]);
    // No token configured: no security scheme, no 401s.
    expect(doc.security).toBeUndefined();
  });

  it('re-points local $refs of a tool schema to where it sits in the document', async () => {
    const doc = await documentOf(open);
    const refs = doc.components.schemas.EchoRefsInput;
    expect(refs.properties.item.$ref).toBe('#/components/schemas/EchoRefsInput/$defs/item');
    expect(refs.$id).toBeUndefined();
    expect(refs.$schema).toBeUndefined();
    const draft7 = doc.components.schemas.EchoDraft7Input;
    expect(draft7.properties.item.$ref).toBe('#/components/schemas/EchoDraft7Input/definitions/item');
    expect(draft7.properties.tag.default).toBe('#/definitions/item');
  });

  it("describes what the server really answers: responses validate against the document's schemas", async () => {
    const doc = await documentOf(open);
    const deref = (await SwaggerParser.dereference(structuredClone(doc))) as typeof doc;
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    const schemaOf = (path: string, status: string) => deref.paths[path].post.responses[status].content['application/json'].schema;
    const check = (schema: unknown, body: unknown) => {
      const validate = ajv.compile(schema as object);
      expect(validate(body), JSON.stringify(validate.errors)).toBe(true);
    };

    const ok = await send(open.url, '/execute/diff-summary', { json: { input: example } });
    check(schemaOf('/execute/diff-summary', '200'), ok.json);
    const generic = await execute(open.url, { tool: 'diff-summary', input: example });
    check(schemaOf('/execute', '200'), generic.json);
    const echoed = await send(open.url, '/execute/echo-refs', { json: { input: { item: { n: 1 }, list: [{ n: 2 }] } } });
    expect(echoed.json.ok).toBe(true);
    check(schemaOf('/execute/echo-refs', '200'), echoed.json);
    const refused = await send(open.url, '/execute/echo-refs', { json: { input: { item: { n: 'one' } } } });
    expect(refused.status).toBe(422);
    check(schemaOf('/execute/echo-refs', '422'), refused.json);
    const missing = await execute(open.url, { tool: 'nope', input: {} });
    check(schemaOf('/execute', '404'), missing.json);
    const bad = await execute(open.url, { tool: 'diff-summary' });
    expect(bad.status).toBe(400);
    check(schemaOf('/execute', '400'), bad.json);
    const requestSchema = deref.paths['/execute/diff-summary'].post.requestBody.content['application/json'].schema;
    check(requestSchema, { input: example, timeout_ms: 100 });
    expect(ajv.compile(requestSchema)({ input: example, timeout_ms: 10_001 })).toBe(false);
  });

  it('follows the tools registered when it is asked for', async () => {
    const before = await documentOf(open);
    expect(before.paths['/execute/late-tool']).toBeUndefined();
    const spec = JSON.parse(readFileSync(join(FIXTURES, 'echo/tool-spec.json'), 'utf8'));
    await open.corral.register({ ...spec, name: 'late-tool' }, readFileSync(join(FIXTURES, 'echo/echo.wasm')));
    const after = await documentOf(open);
    expect(after.paths['/execute/late-tool'].post.operationId).toBe('executeLateTool');
    await expect(SwaggerParser.validate(structuredClone(after))).resolves.toMatchObject({
      openapi: '3.1.0',
      paths: expect.objectContaining({ '/execute': expect.any(Object) }),
    });
  });

  it('with a token: a bearer security scheme, required everywhere but /healthz, and documented 401s', async () => {
    expect((await send(authed.url, '/openapi.json')).status).toBe(401);
    const doc = await documentOf(authed, { authorization: `Bearer ${TOKEN}` });
    await expect(SwaggerParser.validate(structuredClone(doc))).resolves.toMatchObject({
      openapi: '3.1.0',
      paths: expect.objectContaining({ '/execute': expect.any(Object) }),
    });
    expect(doc.components.securitySchemes).toEqual({ bearerAuth: expect.objectContaining({ type: 'http', scheme: 'bearer' }) });
    expect(doc.security).toEqual([{ bearerAuth: [] }]);
    expect(doc.paths['/healthz'].get.security).toEqual([]);
    expect(doc.paths['/execute'].post.responses['401']).toEqual({ $ref: '#/components/responses/Unauthorized' });
  });
});
