/** `corral policy grant|deny|revoke|unlisted|show|path`: the policy file, changed only from here (or by hand). */
import { realpath, stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { semver } from '@corral/core/deps';
import { isMap, isSeq, type Document, type YAMLMap, type YAMLSeq } from '@corral/workflow/deps';
import {
  CorralError,
  ErrorCodes,
  Registry,
  type ErrorDetails,
  isWithin,
  linksOnTheWay,
  nowNs,
  type ApprovalRecord,
  type MountAccess,
  type Policy,
  type Tool,
  type ToolPolicy,
} from '@corral/core';
import { defaultCacheDir } from '../cache.js';
import { absoluteAsGiven } from '../folders.js';
import { corralCodePaths } from '../policy-gate.js';
import { BUNDLED_TOOLS_DIR } from '../corral.js';
import { parseMountFlag, type HostMountSource } from '../mounts.js';
import { EMPTY_POLICY, PolicyFile, defaultPolicyPath, plannedRealpath, updatePolicyFile } from '../policy-file.js';
import { defaultStorePath } from '../store-sqlite.js';
import { loadToolFolder } from '../tool-folder.js';
import { actor, foldersText, gateFor, openStore, when } from './policy-shared.js';
import {
  EXIT_OK,
  EXIT_TOOL_FAILED,
  EXIT_USAGE,
  UsageError,
  closest,
  parse,
  type Cli,
  type Print,
  flagValue,
  toolDirsFlag,
} from './shared.js';

export const help = `corral policy grant TOOL [options]
corral policy deny TOOL
corral policy revoke TOOL [--mount HOSTDIR[:GUEST]] [--env NAME] [--resources] [--approval]
corral policy revoke --approval-id ID
corral policy unlisted allow|deny
corral policy show [--json]
corral policy path

The policy (a YAML file) decides what tools called through MCP or HTTP may
touch. Deny by default: a tool it does not list gets no host folder and no
environment variable. A running server reads it again when it changes.

  grant     add to TOOL's entry (the tool must declare each mount and env name):
    --mount HOSTDIR:GUEST[:ro|rw]  HOSTDIR and every folder in it may be bound to the
                                   mount GUEST, read-only (ro, default) or read-write (rw)
    --env NAME=VALUE               the tool gets NAME=VALUE
    --env-from NAME[=HOSTVAR]      the tool gets HOSTVAR (default NAME) from the server's environment
    --timeout MS, --memory-mb N, --disk-mb N
                                   lower limits than the tool's spec (never higher)
    --approval required|never      whether each call waits for 'corral approve'
    --approval-scope once|folder|tool
                                   the widest an approval may reach (default tool)
    --versions RANGE               only these versions of TOOL (semver)
    --tools DIR                    check TOOL against the tools in DIR too (the bundled ones always)
    --unknown-tool                 grant a TOOL Corral cannot see now (checked against the schema
                                   only); without it, such a name is refused as a likely typo
  deny      TOOL never runs for a remote caller
  revoke    without options, remove TOOL's whole entry; with them, only what they name.
            --approval-id ID withdraws a remembered approval (as corral approve --revoke ID)
  unlisted  allow (default): a tool not listed runs with no folder and no env; deny: it does not run
  show      the policy and the remembered approvals (--json: as JSON)
  path      print where the policy file is

  --policy FILE   the policy (default: $CORRAL_POLICY, else $XDG_CONFIG_HOME/corral/policy.yaml,
                  else ~/.config/corral/policy.yaml)
  --store PATH    where grants, revocations and approvals are recorded (default as for corral run)
  --by NAME       who makes the change, for the audit trail (default: the OS user)

A folder that holds the policy file, the snapshot store or the transpile cache
is refused, at grant time and at every call: no tool may mount it.`;

const COMMON = { policy: { type: 'string' }, store: { type: 'string' }, by: { type: 'string' } } as const;
const TOOL_NAME = /^[a-z0-9][a-z0-9._-]*$/;

export async function command(args: string[], cli: Cli): Promise<number> {
  const [sub, ...rest] = args;
  switch (sub) {
    case undefined:
    case '-h':
    case '--help':
      cli.print(help);
      return sub === undefined ? EXIT_USAGE : EXIT_OK;
    case 'grant':
      return grant(rest, cli.print);
    case 'deny':
      return deny(rest, cli.print);
    case 'revoke':
      return revoke(rest, cli.print);
    case 'unlisted':
      return unlisted(rest, cli.print);
    case 'show':
      return show(rest, cli.print);
    case 'path': {
      const { values } = parse(rest, { policy: COMMON.policy }, false);
      if (values.help) return (cli.print(help), EXIT_OK);
      cli.print(absoluteAsGiven(values.policy ?? defaultPolicyPath()));
      return EXIT_OK;
    }
    default:
      throw new UsageError(`unknown policy command '${sub}'. Commands: grant, deny, revoke, unlisted, show, path.`);
  }
}

function toolName(positionals: string[], what: string): string {
  if (positionals.length !== 1) throw new UsageError(`policy ${what} takes one TOOL name (got ${positionals.length}).`);
  const name = positionals[0]!;
  if (!TOOL_NAME.test(name) || name.length > 64) throw new UsageError(`${JSON.stringify(name)} is not a tool name (like file-stats).`);
  return name;
}

function wholeNumber(flag: string, value: string | undefined, min: number): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) throw new UsageError(`bad ${flag} ${value}: a whole number ≥ ${min}.`);
  return n;
}

/** The bundled tools and --tools folders: what a grant is checked against when TOOL is among them. */
async function knownTool(
  name: string,
  versions: string | undefined,
  toolDirs: string[],
): Promise<{ tool: Tool | undefined; names: string[] }> {
  const registry = new Registry();
  for (const dir of [BUNDLED_TOOLS_DIR, ...toolDirs]) await loadToolFolder(registry, dir);
  const matching = registry
    .list()
    .filter((t) => t.spec.name === name && (versions === undefined || semver.satisfies(t.spec.version, versions)));
  return { tool: matching[0], names: [...new Set(registry.list().map((t) => t.spec.name))] };
}

/** Corral's own state, which no grant may cover: the policy file, the store, the cache. */
async function guardedPaths(policyPath: string, storePath: string, toolDirs: string[]): Promise<{ path: string; what: string }[]> {
  return Promise.all([
    { path: policyPath, what: 'the policy file' },
    { path: storePath, what: 'the snapshot store' },
    { path: defaultCacheDir(), what: 'the transpile cache' },
    ...corralCodePaths().map((path) => ({ path, what: "Corral's own code or bundled tools" })),
    ...toolDirs.map((dir) => ({ path: resolve(dir), what: 'a --tools folder' })),
  ]).then(async (list) =>
    (
      await Promise.all(
        list.map(async (g) => [
          { ...g, path: await plannedRealpath(g.path) },
          // A link on the way (policy.yaml -> ~/dotfiles/...): a tool that may write its folder could repoint it.
          ...(await linksOnTheWay((p) => realpath(p), g.path)).map((path) => ({ path, what: `a link on the way to ${g.what}` })),
        ]),
      )
    ).flat(),
  );
}

function refuse(message: string, details: ErrorDetails<'E_INPUT_VALIDATION'> = {}): never {
  throw new CorralError(ErrorCodes.INPUT_VALIDATION, message, details);
}

/** A path under tools/NAME in the document, creating the entry when missing. */
function toolNode(doc: Document, name: string): YAMLMap {
  if (!isMap(doc.get('tools'))) doc.set('tools', doc.createNode({}));
  const tools = doc.get('tools') as YAMLMap;
  if (!isMap(tools.get(name))) tools.set(name, doc.createNode({}));
  return tools.get(name) as YAMLMap;
}

function mapAt(doc: Document, parent: YAMLMap, key: string): YAMLMap {
  if (!isMap(parent.get(key))) parent.set(key, doc.createNode({}));
  return parent.get(key) as YAMLMap;
}

async function grant(args: string[], print: Print): Promise<number> {
  const { values, positionals } = parse(
    args,
    {
      ...COMMON,
      mount: { type: 'string', multiple: true },
      env: { type: 'string', multiple: true },
      'env-from': { type: 'string', multiple: true },
      timeout: { type: 'string' },
      'memory-mb': { type: 'string' },
      'disk-mb': { type: 'string' },
      approval: { type: 'string' },
      'approval-scope': { type: 'string' },
      versions: { type: 'string' },
      tools: { type: 'string', multiple: true },
      'unknown-tool': { type: 'boolean' },
    },
    true,
  );
  if (values.help) return (print(help), EXIT_OK);
  const toolDirs = toolDirsFlag(values.tools);
  const name = toolName(positionals, 'grant');
  const by = actor(values.by);
  const policyPath = absoluteAsGiven(values.policy ?? defaultPolicyPath());
  const storePath = absoluteAsGiven(values.store ?? defaultStorePath());
  if (values.versions !== undefined && semver.validRange(values.versions) === null)
    throw new UsageError(`bad --versions ${JSON.stringify(values.versions)}: a semver range, like ^1.2.`);
  if (values.approval !== undefined && values.approval !== 'required' && values.approval !== 'never')
    throw new UsageError(`bad --approval ${values.approval}: required or never.`);
  const scope = values['approval-scope'];
  if (scope !== undefined && !['once', 'folder', 'tool'].includes(scope))
    throw new UsageError(`bad --approval-scope ${scope}: once, folder or tool.`);
  const limits = {
    timeout_ms: wholeNumber('--timeout', values.timeout, 1),
    memory_mb: wholeNumber('--memory-mb', values['memory-mb'], 1),
    disk_mb: wholeNumber('--disk-mb', values['disk-mb'], 0),
  };
  const env: [string, string | { from_host: string }][] = [];
  for (const flag of values.env ?? []) {
    const eq = flag.indexOf('=');
    if (eq <= 0) throw new UsageError(`bad --env ${JSON.stringify(flag)}: expected NAME=VALUE.`);
    env.push([flag.slice(0, eq), flag.slice(eq + 1)]);
  }
  for (const flag of values['env-from'] ?? []) {
    const [envName, hostVar = envName] = flag.split('=', 2) as [string, string?];
    env.push([envName, { from_host: hostVar }]);
  }
  for (const [key, value] of env) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) throw new UsageError(`bad env name ${JSON.stringify(key)}.`);
    if (key === 'TZ') throw new UsageError('TZ is reserved: Corral always sets TZ=UTC.');
    if (typeof value !== 'string' && !/^[A-Za-z_][A-Za-z0-9_]*$/.test(value.from_host))
      throw new UsageError(`bad host variable name ${JSON.stringify(value.from_host)}.`);
  }
  const mounts = (values.mount ?? []).map((flag) => flagValue(() => parseMountFlag(flag)));
  if (
    mounts.length + env.length === 0 &&
    Object.values(limits).every((v) => v === undefined) &&
    !values.approval &&
    !scope &&
    !values.versions
  )
    throw new UsageError('grant what? Give --mount, --env, --env-from, a limit, --approval, --approval-scope or --versions.');

  // Each folder as the OS resolves it (symlinks, '..'), checked against Corral's own state and the tool's spec.
  const { tool, names } = await knownTool(name, values.versions, toolDirs);
  // A name Corral cannot see is most often a typo: refuse it unless the user says it is meant.
  if (!tool && !values['unknown-tool']) {
    const guess = closest(name, names);
    throw new UsageError(
      `no tool ${JSON.stringify(name)}${values.versions ? ` matching ${values.versions}` : ''} among the bundled tools` +
        `${values.tools?.length ? ' or the --tools folders' : ''}${guess ? ` (did you mean ${guess}?)` : ''}. ` +
        'Give --tools DIR where it lives, so the grant is checked against its spec, or --unknown-tool to grant it anyway.',
    );
  }
  const guarded = await guardedPaths(policyPath, storePath, toolDirs);
  const folders: { guest: string; folder: string; access: MountAccess }[] = [];
  for (const m of mounts) {
    const path = (m.source as HostMountSource).path;
    let real: string;
    try {
      real = await realpath(path);
      if (!(await stat(real)).isDirectory()) throw new Error('not a folder');
    } catch {
      refuse(`${path} is not a folder that exists; a grant names a real folder.`, { folder: path });
    }
    const hit = guarded.find((g) => isWithin(g.path, real) || isWithin(real, g.path));
    if (hit)
      refuse(`Refusing to grant ${real}: it holds ${hit.what} (${hit.path}), which no tool may see or change.`, {
        folder: real,
        protected: hit.path,
      });
    if (tool) {
      const decl = tool.spec.mounts?.find((d) => d.guest === m.guest);
      if (!decl)
        refuse(
          `${name}@${tool.spec.version} declares no mount ${m.guest} (declared: ${tool.spec.mounts?.map((d) => d.guest).join(', ') || 'none'}).`,
        );
      if (m.access === 'read-write' && decl.access === 'read')
        refuse(`${name}@${tool.spec.version} declares ${m.guest} read-only; grant it with :ro.`, { guest: m.guest });
    }
    folders.push({ guest: m.guest, folder: real, access: m.access });
  }
  if (tool) {
    for (const [key] of env)
      if (!tool.spec.env?.includes(key))
        refuse(`${name}@${tool.spec.version} declares no env ${key} (declared: ${tool.spec.env?.join(', ') || 'none'}).`);
    for (const [key, value] of Object.entries(limits)) {
      const spec = tool.spec.resources?.[key as keyof typeof limits];
      if (value !== undefined && spec !== undefined && value > spec)
        refuse(`resources.${key} ${value} is above ${name}@${tool.spec.version}'s ${spec}; a policy may only lower limits.`);
    }
  }

  const store = await openStore(storePath);
  const changes: string[] = [];
  try {
    await updatePolicyFile(policyPath, (doc) => {
      const entry = toolNode(doc, name);
      if (values.versions !== undefined) {
        entry.set('versions', values.versions);
        changes.push(`versions ${values.versions}`);
      }
      if (entry.get('deny') !== undefined) {
        entry.delete('deny');
        changes.push('no longer denied');
      }
      for (const f of folders) {
        const byGuest = mapAt(doc, entry, 'mounts');
        let list = byGuest.get(f.guest) as YAMLSeq | undefined;
        if (!isSeq(list)) {
          byGuest.set(f.guest, doc.createNode([]));
          list = byGuest.get(f.guest) as YAMLSeq;
        }
        const existing = list.items.find((item) => isMap(item) && item.get('folder') === f.folder) as YAMLMap | undefined;
        if (existing) existing.set('access', f.access);
        else {
          const node = doc.createNode({ folder: f.folder, access: f.access });
          node.flow = true;
          list.add(node);
        }
        changes.push(`mount ${f.guest} → ${f.folder} (${f.access})`);
      }
      for (const [key, value] of env) {
        const node = typeof value === 'string' ? value : doc.createNode(value);
        if (typeof node !== 'string') node.flow = true;
        mapAt(doc, entry, 'env').set(key, node);
        changes.push(typeof value === 'string' ? `env ${key} (fixed value)` : `env ${key} from host $${value.from_host}`);
      }
      for (const [key, value] of Object.entries(limits)) {
        if (value === undefined) continue;
        mapAt(doc, entry, 'resources').set(key, value);
        changes.push(`resources.${key} ${value}`);
      }
      if (values.approval !== undefined) {
        entry.set('approval', values.approval);
        changes.push(`approval ${values.approval}`);
      }
      if (scope !== undefined) {
        entry.set('approval_scope', scope);
        changes.push(`approval_scope ${scope}`);
      }
    });
    await record(store, 'grant', by, name, policyPath, changes, folders);
  } finally {
    await store.close();
  }
  print(`Granted ${name}${tool ? '' : ' (a tool Corral cannot see now: checked against the schema only)'}:`);
  for (const c of changes) print(`  ${c}`);
  print(`Policy: ${policyPath}`);
  return EXIT_OK;
}

async function record(
  store: Awaited<ReturnType<typeof openStore>>,
  action: 'grant' | 'revoke',
  by: string,
  tool: string | null,
  policyPath: string,
  changes: string[],
  folders: unknown[] = [],
): Promise<void> {
  try {
    await store.recordAudit({
      id: crypto.randomUUID(),
      time_ns: nowNs(),
      action,
      actor: by,
      tool,
      approval_id: null,
      detail: { policy: policyPath, changes, ...(folders.length > 0 ? { folders } : {}) },
    });
  } catch (err) {
    if (CorralError.is(err, ErrorCodes.STORE)) {
      throw new CorralError(
        ErrorCodes.STORE,
        `The policy was changed, but the change could not be recorded in the audit trail: ${err.message}`,
        {
          ...err.details,
        },
      );
    }
    throw new CorralError(
      ErrorCodes.STORE,
      `The policy was changed, but the change could not be recorded in the audit trail: ${err instanceof Error ? err.message : String(err)}`,
      { store: store.location },
    );
  }
}

async function deny(args: string[], print: Print): Promise<number> {
  const { values, positionals } = parse(args, { ...COMMON }, true);
  if (values.help) return (print(help), EXIT_OK);
  const name = toolName(positionals, 'deny');
  const policyPath = absoluteAsGiven(values.policy ?? defaultPolicyPath());
  const store = await openStore(values.store);
  try {
    await updatePolicyFile(policyPath, (doc) => {
      (doc.get('tools') as YAMLMap | undefined)?.delete(name);
      toolNode(doc, name).set('deny', true);
    });
    await record(store, 'revoke', actor(values.by), name, policyPath, ['denied: never runs for a remote caller']);
  } finally {
    await store.close();
  }
  print(`Denied ${name}: it never runs for a remote caller (its earlier grants are removed).`);
  return EXIT_OK;
}

async function revoke(args: string[], print: Print): Promise<number> {
  const { values, positionals } = parse(
    args,
    {
      ...COMMON,
      mount: { type: 'string', multiple: true },
      env: { type: 'string', multiple: true },
      resources: { type: 'boolean' },
      approval: { type: 'boolean' },
      'approval-id': { type: 'string' },
    },
    true,
  );
  if (values.help) return (print(help), EXIT_OK);
  const by = actor(values.by);
  if (values['approval-id'] !== undefined) {
    if (positionals.length > 0 || values.mount || values.env || values.resources || values.approval)
      throw new UsageError('--approval-id takes nothing else.');
    const store = await openStore(values.store);
    try {
      const a = await gateFor(store, values.policy).revokeApproval(values['approval-id'], { by });
      print(`Revoked approval ${a.id} (${a.tool}@${a.version}, scope ${a.scope ?? 'once'}).`);
    } finally {
      await store.close();
    }
    return EXIT_OK;
  }
  const name = toolName(positionals, 'revoke');
  const policyPath = absoluteAsGiven(values.policy ?? defaultPolicyPath());
  // A folder to revoke matches as written, made absolute, and as the OS resolves it now.
  const mountArgs = await Promise.all(
    (values.mount ?? []).map(async (given) => {
      const flag = given.replace(/:(ro|rw)$/, ''); // as written for grant: HOSTDIR:GUEST[:ro|rw]
      const colon = flag.lastIndexOf(':');
      const [path, guest] =
        colon > 0 && flag.slice(colon + 1).startsWith('/') ? [flag.slice(0, colon), flag.slice(colon + 1)] : [flag, undefined];
      const forms = new Set([resolve(path)]);
      await realpath(path).then(
        (r) => forms.add(r),
        () => undefined,
      );
      return { path, guest, forms };
    }),
  );
  const whole = mountArgs.length === 0 && !values.env && !values.resources && !values.approval;
  const store = await openStore(values.store);
  const changes: string[] = [];
  try {
    await updatePolicyFile(policyPath, (doc) => {
      const tools = doc.get('tools');
      const entry = isMap(tools) ? (tools.get(name) as YAMLMap | undefined) : undefined;
      if (!isMap(entry)) refuse(`${name} is not in the policy ${policyPath}; nothing to revoke.`);
      if (whole) {
        (tools as YAMLMap).delete(name);
        changes.push('the whole entry');
        return;
      }
      for (const m of mountArgs) {
        const byGuest = entry.get('mounts');
        let removed = 0;
        if (isMap(byGuest)) {
          for (const pair of [...byGuest.items]) {
            const guest = String((pair.key as { value?: unknown })?.value ?? pair.key);
            if (m.guest !== undefined && guest !== m.guest) continue;
            const list = pair.value;
            if (!isSeq(list)) continue;
            for (const item of [...list.items]) {
              if (isMap(item) && m.forms.has(String(item.get('folder')))) {
                list.delete(list.items.indexOf(item));
                removed++;
                changes.push(`mount ${guest} → ${String(item.get('folder'))}`);
              }
            }
            if (list.items.length === 0) byGuest.delete(pair.key);
          }
          if (byGuest.items.length === 0) entry.delete('mounts');
        }
        if (removed === 0) refuse(`${name} has no grant of ${m.path}${m.guest ? ` at ${m.guest}` : ''} in ${policyPath}.`);
      }
      for (const key of values.env ?? []) {
        const envMap = entry.get('env');
        if (!isMap(envMap) || !envMap.has(key)) refuse(`${name} has no env ${key} in ${policyPath}.`);
        envMap.delete(key);
        if (envMap.items.length === 0) entry.delete('env');
        changes.push(`env ${key}`);
      }
      if (values.resources) {
        if (!entry.delete('resources')) refuse(`${name} has no resource limits in ${policyPath}.`);
        changes.push('resource limits');
      }
      if (values.approval) {
        const had = entry.delete('approval');
        if (!entry.delete('approval_scope') && !had) refuse(`${name} has no approval setting in ${policyPath}.`);
        changes.push('approval setting (calls no longer wait)');
      }
    });
    await record(store, 'revoke', by, name, policyPath, changes);
  } finally {
    await store.close();
  }
  print(`Revoked from ${name}:`);
  for (const c of changes) print(`  ${c}`);
  print(`Policy: ${policyPath}`);
  return EXIT_OK;
}

async function unlisted(args: string[], print: Print): Promise<number> {
  const { values, positionals } = parse(args, { ...COMMON }, true);
  if (values.help) return (print(help), EXIT_OK);
  const [rule] = positionals;
  if (positionals.length !== 1 || (rule !== 'allow' && rule !== 'deny')) throw new UsageError('policy unlisted takes allow or deny.');
  const policyPath = absoluteAsGiven(values.policy ?? defaultPolicyPath());
  const store = await openStore(values.store);
  try {
    await updatePolicyFile(policyPath, (doc) => doc.set('unlisted_tools', rule));
    await record(store, rule === 'allow' ? 'grant' : 'revoke', actor(values.by), null, policyPath, [`unlisted_tools ${rule}`]);
  } finally {
    await store.close();
  }
  print(
    rule === 'allow'
      ? 'A tool the policy does not list may run for a remote caller, with no host folder and no env.'
      : 'A tool the policy does not list never runs for a remote caller.',
  );
  return EXIT_OK;
}

/** The policy as shown: fixed env values are not printed (they may be secrets). */
function shown(policy: Policy): Policy {
  const copy = structuredClone(policy);
  for (const tool of Object.values(copy.tools ?? {}))
    for (const key of Object.keys(tool.env ?? {})) if (typeof tool.env![key] === 'string') tool.env![key] = '(fixed value, not shown)';
  return copy;
}

async function show(args: string[], print: Print): Promise<number> {
  const { values, positionals } = parse(args, { policy: COMMON.policy, store: COMMON.store, json: { type: 'boolean' } }, false);
  if (values.help) return (print(help), EXIT_OK);
  if (positionals.length > 0) throw new UsageError('policy show takes no arguments.');
  const file = new PolicyFile(values.policy ?? defaultPolicyPath());
  const exists = await file.exists();
  let policy: Policy | undefined;
  let error: CorralError | undefined;
  try {
    policy = await file.load();
  } catch (err) {
    if (!(err instanceof CorralError)) throw err;
    error = err;
  }
  // Remembered approvals widen what runs without asking: they belong to the effective policy.
  const { openExisting } = await import('./store.js');
  const store = await openExisting(values.store);
  const standing: ApprovalRecord[] = store ? await gateFor(store, file.location).standing() : [];
  await store?.close();
  if (values.json) {
    print(
      JSON.stringify(
        {
          ok: !error,
          policy: file.location,
          status: error ? 'invalid' : exists ? 'ok' : 'missing',
          ...(error ? { error: error.toJSON() } : {}),
          effective: policy ? shown(policy) : null,
          remembered_approvals: standing,
        },
        null,
        2,
      ),
    );
    return error ? EXIT_TOOL_FAILED : EXIT_OK;
  }
  print(`Policy: ${file.location}${exists ? '' : ' (no file: nothing granted)'}`);
  if (error) {
    print(`INVALID, so every call through MCP or HTTP is refused until it is fixed:\n  ${error.message}`);
    return EXIT_TOOL_FAILED;
  }
  const p = policy ?? EMPTY_POLICY;
  print(
    p.unlisted_tools === 'deny'
      ? 'Unlisted tools: never run (unlisted_tools: deny)'
      : 'Unlisted tools: run with no host folder and no env (unlisted_tools: allow)',
  );
  const tools = Object.entries(p.tools ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  if (tools.length === 0) print('No tool is listed: no tool gets a host folder or an env value.');
  for (const [name, t] of tools) print(`\n${toolText(name, t)}`);
  if (standing.length > 0) {
    print('\nRemembered approvals (corral policy revoke --approval-id ID):');
    for (const a of standing)
      print(
        `  ${a.id}  ${a.tool}@${a.version}  scope ${a.scope}  by ${a.decided_by ?? '?'} ${a.decided_ns ? when(a.decided_ns) : ''}  ${foldersText(a)}`,
      );
  }
  return EXIT_OK;
}

function toolText(name: string, t: ToolPolicy): string {
  const lines = [`${name}${t.versions ? ` (versions ${t.versions})` : ''}${t.deny ? ': DENIED' : ''}`];
  for (const [guest, grants] of Object.entries(t.mounts ?? {}))
    for (const g of grants) lines.push(`  mount ${guest} → ${g.folder} (${g.access})`);
  for (const [key, value] of Object.entries(t.env ?? {}))
    lines.push(`  env ${key} ${typeof value === 'string' ? '(fixed value)' : `from host $${value.from_host}`}`);
  for (const [key, value] of Object.entries(t.resources ?? {})) lines.push(`  resources.${key} ${value}`);
  if (t.approval === 'required') lines.push(`  approval required (up to scope ${t.approval_scope ?? 'tool'})`);
  if (lines.length === 1 && !t.deny) lines.push('  (nothing granted)');
  return lines.join('\n');
}
