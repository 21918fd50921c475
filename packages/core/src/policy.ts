/**
 * The policy: what a tool called by a remote caller (an MCP client, an HTTP
 * request) may touch. Per tool: which host folders each mount it declares may
 * bind to and with what access, which environment values it gets, tighter
 * resource limits, and whether a person must approve each call.
 *
 * Deny by default: a tool the policy does not list gets no host folder and no
 * environment variable; it may still run on its input alone (no folders, no
 * env, no network: the sandbox) unless `unlisted_tools: deny`.
 *
 * Host-agnostic: the policy arrives as parsed data (the Node host reads
 * corral.policy.yaml) and folders are compared on real paths through a
 * `realpath` the host supplies.
 */
import { loadAjv, semver, type ValidateFunction } from './deps.js';
import { CorralError, ErrorCodes, type PolicyDenialReason, type PolicyDeniedDetails } from './errors.js';
import { MAX_BINDINGS, MAX_PATH_LENGTH, isGuestPath, isHostPath } from './policy-records.js';
import { problemsText, toProblems, type Problem } from './schema.js';
import type { ApprovalScope, FolderUse } from './snapshot.js';
import { specDefaults } from './spec.js';
import type { MountAccess, MountBinding, MountSource, ToolSpec } from './types.js';

/** The policy file format this code reads (`version:` in the file). */
export const POLICY_VERSION = 1;

/** One host folder a mount may bind to: that folder or any folder inside it, at most with `access`. */
export interface FolderGrant {
  folder: string;
  access: MountAccess;
}

/** An environment value: fixed in the policy, or `{ from_host: NAME }`, read from the environment of the process that runs the gate when a call is checked. */
export type EnvValue = string | { from_host: string };

export interface ToolPolicy {
  /** A semver range: only these versions get what this entry grants; other versions are treated as unlisted. */
  versions?: string;
  /** Never run this tool for a remote caller. */
  deny?: boolean;
  /** Declared guest mount → the host folders it may bind to. */
  mounts?: Record<string, FolderGrant[]>;
  /** Declared env name → its value. Names the tool's spec does not declare are never given. */
  env?: Record<string, EnvValue>;
  /** Lower limits than the spec's; a value above the spec's is ignored (the spec's stands). */
  resources?: { timeout_ms?: number; memory_mb?: number; disk_mb?: number };
  /** `required`: every call waits for a person (`corral approve`). Default `never`. */
  approval?: 'required' | 'never';
  /** The widest scope an approver may give (once < folder < tool). Default `tool`. */
  approval_scope?: ApprovalScope;
}

export interface Policy {
  version: typeof POLICY_VERSION;
  /** `allow` (default): an unlisted tool runs with no host folder and no env; `deny`: it does not run. */
  unlisted_tools?: 'allow' | 'deny';
  tools?: Record<string, ToolPolicy>;
}

const TOOL_NAME = '^[a-z0-9][a-z0-9._-]*$';
const ENV_NAME = '^[A-Za-z_][A-Za-z0-9_]*$';

/** The JSON Schema (draft-07) of corral.policy.yaml; also shipped as @corral/core/policy.schema.json. */
export const policySchema = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  title: 'Corral policy (corral.policy.yaml)',
  description:
    'What tools called by remote callers (MCP, HTTP) may touch. Deny by default: an unlisted tool gets no host folder and no environment variable.',
  type: 'object',
  required: ['version'],
  additionalProperties: false,
  properties: {
    $schema: { type: 'string' },
    version: { const: POLICY_VERSION, description: 'The policy format; this Corral reads version 1.' },
    unlisted_tools: {
      enum: ['allow', 'deny'],
      description: 'allow (default): a tool not listed runs with no host folder and no env; deny: it does not run at all.',
    },
    tools: {
      type: 'object',
      maxProperties: 1000,
      propertyNames: { pattern: TOOL_NAME, maxLength: 64 },
      additionalProperties: { $ref: '#/definitions/tool' },
    },
  },
  definitions: {
    tool: {
      type: 'object',
      additionalProperties: false,
      properties: {
        versions: { type: 'string', minLength: 1, maxLength: 256, description: 'A semver range, e.g. ^1.2' },
        deny: { type: 'boolean' },
        mounts: {
          type: 'object',
          maxProperties: MAX_BINDINGS,
          propertyNames: { pattern: '^(/[^/\\u0000]+)+$', maxLength: 256 },
          additionalProperties: { type: 'array', maxItems: 100, items: { $ref: '#/definitions/folder' } },
        },
        env: {
          type: 'object',
          maxProperties: 256,
          propertyNames: { pattern: ENV_NAME, maxLength: 256 },
          additionalProperties: {
            oneOf: [
              { type: 'string', maxLength: 65536 },
              {
                type: 'object',
                required: ['from_host'],
                additionalProperties: false,
                properties: { from_host: { type: 'string', pattern: ENV_NAME, maxLength: 256 } },
              },
            ],
          },
        },
        resources: {
          type: 'object',
          additionalProperties: false,
          properties: {
            timeout_ms: { type: 'integer', minimum: 1, maximum: 3_600_000 },
            memory_mb: { type: 'integer', minimum: 1, maximum: 4096 },
            disk_mb: { type: 'integer', minimum: 0, maximum: 1_048_576 },
          },
        },
        approval: { enum: ['required', 'never'] },
        approval_scope: { enum: ['once', 'folder', 'tool'] },
      },
    },
    folder: {
      type: 'object',
      required: ['folder', 'access'],
      additionalProperties: false,
      properties: {
        folder: { type: 'string', pattern: '^/[^\\u0000]*$', maxLength: MAX_PATH_LENGTH, description: 'An absolute host folder' },
        access: { enum: ['read', 'read-write'] },
      },
    },
  },
} as const;

let compiled: ValidateFunction | undefined;
function shape(): ValidateFunction {
  compiled ??= new (loadAjv().Ajv)({ allErrors: true, logger: false }).compile(policySchema);
  return compiled;
}

export type PolicyValidation = { ok: true; policy: Policy } | { ok: false; problems: Problem[] };

/** Check a parsed policy against `policySchema` and the rules it cannot say; every problem at once, by JSON path. */
export function validatePolicy(raw: unknown): PolicyValidation {
  const validate = shape();
  const problems: Problem[] = validate(raw) ? [] : toProblems(validate.errors);
  if (problems.length === 0) problems.push(...semanticProblems(raw as Policy));
  if (problems.length > 0) return { ok: false, problems };
  // JSON round-trip: a copy the caller cannot change under us.
  const { $schema: _ignored, ...policy } = JSON.parse(JSON.stringify(raw)) as Policy & { $schema?: string };
  return { ok: true, policy };
}

/** validatePolicy, or E_INPUT_VALIDATION listing every problem. */
export function parsePolicy(raw: unknown, source = 'policy'): Policy {
  const result = validatePolicy(raw);
  if (result.ok) return result.policy;
  const n = result.problems.length;
  throw new CorralError(
    ErrorCodes.INPUT_VALIDATION,
    `Invalid policy ${source}: ${n} problem${n === 1 ? '' : 's'}: ${problemsText(result.problems)}`,
    { source, problems: result.problems },
  );
}

const ptr = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

function semanticProblems(policy: Policy): Problem[] {
  const problems: Problem[] = [];
  for (const [name, tool] of Object.entries(policy.tools ?? {})) {
    const at = `/tools/${ptr(name)}`;
    if (tool.versions !== undefined && semver.validRange(tool.versions) === null)
      problems.push({ path: `${at}/versions`, message: `is not a semver range (like ^1.2 or >=1.0.0 <2)` });
    for (const [guest, grants] of Object.entries(tool.mounts ?? {})) {
      if (!isGuestPath(guest))
        problems.push({ path: `${at}/mounts/${ptr(guest)}`, message: "is not a guest mount path (no '.', '..' or empty segments)" });
      grants.forEach((g, i) => {
        if (!isHostPath(g.folder) || g.folder.split('/').some((s) => s === '.' || s === '..'))
          problems.push({ path: `${at}/mounts/${ptr(guest)}/${i}/folder`, message: "must be an absolute host folder without '.' or '..'" });
      });
    }
    if (tool.env && Object.hasOwn(tool.env, 'TZ'))
      problems.push({ path: `${at}/env/TZ`, message: 'TZ is reserved: Corral always sets TZ=UTC' });
  }
  return problems;
}

// --- evaluation ---------------------------------------------------------------------------------

/** A folder asked for: its path, or its path and the access wanted (default: the most the policy allows). */
export type RequestedBinding = string | { folder: string; access?: MountAccess };

/** Who is calling, as the host knows it. Kept in audit events and approvals. */
export interface CallerInfo {
  /** 'mcp', 'http', 'cli', … */
  kind?: string;
  /** The client's name, a token's label: whatever identifies the caller to a person. */
  id?: string;
  /** Folders the caller exposed (MCP roots): when given, a mount may bind only inside one of them. */
  roots?: string[];
}

export interface PolicyRequest {
  /** The resolved tool's spec (name, version, declared mounts, env, resources). */
  tool: Pick<ToolSpec, 'name' | 'version' | 'mounts' | 'env' | 'resources'>;
  /** Declared guest mount → host folder. */
  bindings?: Record<string, RequestedBinding>;
  caller?: CallerInfo;
}

/** What the host provides: real paths, the environment, and what no mount may contain. */
export interface PolicyHost {
  /** The canonical path of an existing file or folder (symlinks and `..` resolved); throws when it does not exist. */
  realpath(path: string): Promise<string>;
  /** The host environment, for `from_host` values. Without it, `from_host` values are not given. */
  env?(name: string): string | undefined;
  /** Files no mount may contain (the policy file, the snapshot store, the transpile cache), at any depth. */
  protectedPaths?: readonly string[];
  /** The mount source this host opens for a granted folder (its real path). */
  mountSource(folder: string): MountSource;
  /** What `corral policy grant` needs to edit this policy, when it is not the default file (e.g. `--policy /etc/corral.yaml`): hints add it. */
  grantArgs?: string;
}

// Why the policy refused, and what it says about: the E_POLICY_DENIED details, with every code's in errors.ts.
export type { PolicyDenialReason, PolicyDeniedDetails } from './errors.js';

export function policyDenied(message: string, details: PolicyDeniedDetails): CorralError {
  return new CorralError(ErrorCodes.POLICY_DENIED, message, { ...details });
}

/** What a call gets when the policy lets it run. */
export interface PolicyEffect {
  /** Mount bindings for `invoke`: each granted folder by its real path, as the host's mount source. */
  mounts: MountBinding[];
  /** The same folders, for records and approval scopes. */
  folders: FolderUse[];
  env: Record<string, string>;
  /** Effective limits: the spec's, lowered by the policy. */
  limits: { timeout_ms: number; memory_mb: number; disk_mb: number };
  /** Things given less than the policy asked for (an env name the spec does not declare, …). */
  warnings: string[];
}

export type PolicyDecision =
  | ({ decision: 'allow'; tool: string; version: string; rule: 'listed' | 'unlisted' } & PolicyEffect)
  | ({ decision: 'approval_required'; tool: string; version: string; rule: 'listed'; max_scope: ApprovalScope } & PolicyEffect)
  | { decision: 'deny'; tool: string; version: string | null; error: CorralError };

const ACCESS_RANK: Record<MountAccess, number> = { read: 0, 'read-write': 1 };
const minAccess = (a: MountAccess, b: MountAccess): MountAccess => (ACCESS_RANK[a] <= ACCESS_RANK[b] ? a : b);

/** True when `path` is `folder` or inside it (both normalized absolute POSIX paths). */
export function isWithin(path: string, folder: string): boolean {
  if (folder === '/') return path.startsWith('/');
  return path === folder || path.startsWith(`${folder}/`);
}

/** `..`, `.` and repeated slashes removed, lexically (for paths that may not exist). */
function normalize(path: string): string {
  const out: string[] = [];
  for (const s of path.split('/')) {
    if (s === '' || s === '.') continue;
    if (s === '..') out.pop();
    else out.push(s);
  }
  return `/${out.join('/')}`;
}

/**
 * realpath of the longest existing prefix, plus the rest: where a file that may not exist yet would be.
 * `..` is left for realpath, which walks it as the OS does (`link/..` is above the link's target);
 * only the part that does not exist is collapsed by name.
 */
export async function realpathOrPlanned(realpath: PolicyHost['realpath'], path: string): Promise<string> {
  const rest: string[] = [];
  let current = `/${path
    .split('/')
    .filter((s) => s !== '' && s !== '.')
    .join('/')}`;
  for (let i = 0; i < 256; i++) {
    try {
      const real = await realpath(current);
      return normalize([real, ...rest.reverse()].join('/'));
    } catch {
      if (current === '/') break;
      const cut = current.lastIndexOf('/');
      rest.push(current.slice(cut + 1));
      current = cut === 0 ? '/' : current.slice(0, cut);
    }
  }
  return normalize(path);
}

/**
 * Where each symbolic link on the way to `path` lies (the link itself, not what it leads to). A tool
 * that may write the folder holding one could point it elsewhere: `~/.config/corral/policy.yaml ->
 * ~/dotfiles/policy.yaml` with ~/.config mounted read-write let the tool put its own policy file
 * there. A link is an entry whose real path is not its folder's real path plus its name.
 */
export async function linksOnTheWay(realpath: PolicyHost['realpath'], path: string): Promise<string[]> {
  const links: string[] = [];
  const parts = path.split('/').filter((s) => s !== '' && s !== '.');
  for (let i = 0; i < parts.length; i++) {
    const name = parts[i]!;
    if (name === '..') continue;
    const folder = `/${parts.slice(0, i).join('/')}`;
    let entry: string;
    try {
      entry = `${(await realpath(folder)).replace(/\/$/, '')}/${name}`;
    } catch {
      break; // the rest does not exist: no link there to follow
    }
    const real = await realpath(`${folder === '/' ? '' : folder}/${name}`).catch(() => undefined);
    if (real !== entry) links.push(normalize(entry));
  }
  return links;
}

/** The policy entry that applies to a tool version, if any. */
export function toolPolicy(policy: Policy, name: string, version: string): ToolPolicy | undefined {
  const tools = policy.tools ?? {};
  if (!Object.hasOwn(tools, name)) return undefined;
  const entry = tools[name]!;
  if (entry.versions !== undefined && !semver.satisfies(version, entry.versions, { includePrerelease: true })) return undefined;
  return entry;
}

function checkRequest(
  request: PolicyRequest,
): { bindings: [string, { folder: string; access?: MountAccess }][]; roots: string[] | undefined } | string {
  if (typeof request !== 'object' || request === null) return 'the request must be an object';
  const spec = request.tool;
  if (typeof spec !== 'object' || spec === null || typeof spec.name !== 'string' || typeof spec.version !== 'string')
    return 'the request must name a resolved tool (its spec)';
  const raw = request.bindings ?? {};
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return 'bindings must map guest mounts to host folders';
  const entries = Object.entries(raw);
  if (entries.length > MAX_BINDINGS) return `at most ${MAX_BINDINGS} mounts may be bound`;
  const bindings: [string, { folder: string; access?: MountAccess }][] = [];
  for (const [guest, b] of entries) {
    if (!isGuestPath(guest)) return `${JSON.stringify(String(guest).slice(0, 100))} is not a guest mount path like /workspace`;
    const binding = typeof b === 'string' ? { folder: b } : b;
    if (typeof binding !== 'object' || binding === null)
      return `the binding of ${guest.slice(0, 256)} must be a folder path or { folder, access }`;
    if (!isHostPath(binding.folder))
      return `the folder bound to ${guest.slice(0, 256)} must be an absolute host path of at most ${MAX_PATH_LENGTH} characters (got ${String(JSON.stringify(binding.folder)).slice(0, 200)})`;
    if (binding.access !== undefined && binding.access !== 'read' && binding.access !== 'read-write')
      return `the access asked for ${guest.slice(0, 256)} must be 'read' or 'read-write'`;
    bindings.push([guest, binding.access === undefined ? { folder: binding.folder } : { folder: binding.folder, access: binding.access }]);
  }
  const roots = request.caller?.roots;
  if (roots !== undefined && (!Array.isArray(roots) || roots.length > 256 || !roots.every(isHostPath)))
    return 'caller.roots must be a list of at most 256 absolute host paths';
  return { bindings, roots };
}

/**
 * Decide one call. Never throws for a refused call: a refusal is
 * `{ decision: 'deny', error }` with E_POLICY_DENIED and a reason.
 */
export async function evaluatePolicy(policy: Policy, request: PolicyRequest, host: PolicyHost, source = 'policy'): Promise<PolicyDecision> {
  const checked = checkRequest(request);
  const name = typeof request?.tool?.name === 'string' ? request.tool.name : null;
  const version = typeof request?.tool?.version === 'string' ? request.tool.version : null;
  const deny = (reason: PolicyDenialReason, message: string, extra: Partial<PolicyDeniedDetails> = {}): PolicyDecision => ({
    decision: 'deny',
    tool: name ?? '',
    version,
    error: policyDenied(message, { reason, tool: name, version, policy: source, ...extra }),
  });
  if (typeof checked === 'string') return deny('bad_request', `Refused: ${checked}.`);
  const spec = request.tool;
  const toolName = spec.name;
  const toolVersion = spec.version;
  const label = `${toolName}@${toolVersion}`;
  const grantArgs = host.grantArgs ? ` ${host.grantArgs}` : '';
  const resources = { ...specDefaults.resources, ...spec.resources };
  const limits = { timeout_ms: resources.timeout_ms, memory_mb: resources.memory_mb, disk_mb: resources.disk_mb };
  const entry = toolPolicy(policy, toolName, toolVersion);

  if (entry?.deny) return deny('tool_denied', `The policy (${source}) denies ${label}.`);
  if (!entry) {
    if (policy.unlisted_tools === 'deny')
      return deny(
        'unlisted_tool',
        `${label} is not in the policy (${source}), which lets no unlisted tool run. Add it with: corral policy grant ${toolName}${grantArgs}`,
      );
    if (checked.bindings.length > 0) {
      const [guest, b] = checked.bindings[0]!;
      return deny(
        'not_granted',
        `${label} is not in the policy (${source}), so it gets no host folder (asked: ${guest} → ${b.folder}). ` +
          `Grant one with: corral policy grant ${toolName} --mount ${b.folder}:${guest}${grantArgs}`,
        { guest, folder: b.folder },
      );
    }
    return {
      decision: 'allow',
      tool: toolName,
      version: toolVersion,
      rule: 'unlisted',
      mounts: [],
      folders: [],
      env: {},
      limits,
      warnings: [],
    };
  }

  // Folders, each on real paths: symlinks, '..' and (where the OS folds it) case resolved before any comparison.
  const declared = spec.mounts ?? [];
  const roots = checked.roots && (await Promise.all(checked.roots.map((r) => realpathOrPlanned(host.realpath, r))));
  // Only a call that binds folders needs them (every link on the way to each is a realpath or two).
  const protectedReal = (
    checked.bindings.length === 0
      ? []
      : await Promise.all(
          (host.protectedPaths ?? []).map(async (p) => [
            await realpathOrPlanned(host.realpath, p),
            ...(await linksOnTheWay(host.realpath, p)),
          ]),
        )
  ).flat();
  const mounts: MountBinding[] = [];
  const folders: FolderUse[] = [];
  for (const [guest, asked] of checked.bindings) {
    const decl = declared.find((d) => d.guest === guest);
    if (!decl)
      return deny(
        'undeclared_mount',
        `${label} declares no mount ${guest} (declared: ${declared.map((d) => d.guest).join(', ') || 'none'}).`,
        {
          guest,
        },
      );
    const grants = Object.hasOwn(entry.mounts ?? {}, guest) ? entry.mounts![guest]! : [];
    let real: string;
    try {
      real = await host.realpath(asked.folder);
    } catch {
      return deny('folder_missing', `The folder bound to ${guest}, ${asked.folder}, does not exist or cannot be resolved.`, {
        guest,
        folder: asked.folder,
      });
    }
    // Either way round: a folder holding the store, or a folder inside the cache.
    const guarded = protectedReal.find((p) => isWithin(p, real) || isWithin(real, p));
    if (guarded)
      return deny(
        'protected_folder',
        `${real} holds Corral's own state (${guarded}: the policy, the snapshot store or the cache); no tool may mount it.`,
        { guest, folder: real },
      );
    if (roots) {
      if (!roots.some((r) => isWithin(real, r)))
        return deny('outside_roots', `${real} is outside the folders the caller exposed (${roots.join(', ') || 'none'}).`, {
          guest,
          folder: real,
        });
    }
    // The widest access any matching grant gives, never more than the spec declares.
    let allowed: MountAccess | undefined;
    for (const g of grants) {
      let grantReal: string;
      try {
        grantReal = await host.realpath(g.folder);
      } catch {
        continue; // a granted folder that no longer exists grants nothing
      }
      if (isWithin(real, grantReal))
        allowed = allowed === undefined ? g.access : ACCESS_RANK[g.access] > ACCESS_RANK[allowed] ? g.access : allowed;
    }
    if (allowed === undefined)
      return deny(
        'not_granted',
        `The policy (${source}) does not let ${label} mount ${real} at ${guest}. Grant it with: corral policy grant ${toolName} --mount ${real}:${guest}${grantArgs}`,
        { guest, folder: real },
      );
    allowed = minAccess(allowed, decl.access);
    if (asked.access !== undefined && ACCESS_RANK[asked.access] > ACCESS_RANK[allowed])
      return deny(
        'access_not_granted',
        `The policy (${source}) lets ${label} mount ${real} at ${guest} ${allowed}-only, not ${asked.access}.`,
        {
          guest,
          folder: real,
        },
      );
    const access = asked.access ?? allowed;
    mounts.push({ guest, access, source: host.mountSource(real) });
    folders.push({ guest, folder: real, access });
  }

  const warnings: string[] = [];
  const env: Record<string, string> = {};
  const declaredEnv = spec.env ?? [];
  for (const [key, value] of Object.entries(entry.env ?? {})) {
    if (!declaredEnv.includes(key)) {
      warnings.push(`env ${key} is not declared by ${label}; not given`);
      continue;
    }
    const v = typeof value === 'string' ? value : host.env?.(value.from_host);
    if (v === undefined) warnings.push(`env ${key}: the host has no ${typeof value === 'string' ? key : value.from_host}; not given`);
    else env[key] = v;
  }
  for (const key of ['timeout_ms', 'memory_mb', 'disk_mb'] as const) {
    const lower = entry.resources?.[key];
    if (lower === undefined) continue;
    if (lower > limits[key]) warnings.push(`resources.${key} ${lower} is above ${label}'s ${limits[key]}; the spec's stands`);
    else limits[key] = lower;
  }
  const effect: PolicyEffect = { mounts, folders, env, limits, warnings };
  if (entry.approval === 'required')
    return {
      decision: 'approval_required',
      tool: toolName,
      version: toolVersion,
      rule: 'listed',
      max_scope: entry.approval_scope ?? 'tool',
      ...effect,
    };
  return { decision: 'allow', tool: toolName, version: toolVersion, rule: 'listed', ...effect };
}

/** True when a remembered approval of `scope` covers a call that would see `folders`. */
export function approvalCovers(
  approval: { tool: string; version: string; scope: ApprovalScope | null; folders: FolderUse[] },
  tool: string,
  version: string,
  folders: FolderUse[],
): boolean {
  if (approval.tool !== tool || approval.version !== version) return false;
  if (approval.scope === 'tool') return true;
  if (approval.scope !== 'folder') return false;
  return folders.every((f) =>
    approval.folders.some((a) => a.guest === f.guest && isWithin(f.folder, a.folder) && ACCESS_RANK[f.access] <= ACCESS_RANK[a.access]),
  );
}
