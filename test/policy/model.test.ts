/**
 * The policy model on real folders: deny by default, what a grant gives,
 * real-path checks (symlinks, `..`), Corral's own state refused, the
 * caller's roots, env and limits, and the file format's validation.
 */
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { realpath } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { evaluatePolicy, policySchema, validatePolicy, type Policy, type PolicyHost, type PolicyRequest } from '@corral/core';
import { PolicyFile, parsePolicyText } from '@corral/node/policy';

const ROOT = new URL('../..', import.meta.url).pathname;

/** A temp tree: home/{src/{a.txt,link-out,link-in},secret/,state/{policy.yaml,snapshots.db},cache/}. */
function tree() {
  const base = realpathSync(mkdtempSync(join(tmpdir(), 'corral-policy-model-')));
  const dirs = { src: join(base, 'home/src'), secret: join(base, 'home/secret'), state: join(base, 'state'), cache: join(base, 'cache') };
  for (const d of Object.values(dirs)) mkdirSync(d, { recursive: true });
  mkdirSync(join(dirs.src, 'sub'));
  writeFileSync(join(dirs.src, 'a.txt'), 'hello\n');
  writeFileSync(join(dirs.secret, 'key'), 'secret\n');
  symlinkSync(dirs.secret, join(dirs.src, 'link-out'));
  symlinkSync('sub', join(dirs.src, 'link-in'));
  return { base, ...dirs, policyFile: join(dirs.state, 'policy.yaml'), storeFile: join(dirs.state, 'snapshots.db') };
}

const fileStats = {
  name: 'file-stats',
  version: '1.0.0',
  mounts: [
    { guest: '/workspace', access: 'read' as const },
    { guest: '/out', access: 'read-write' as const },
  ],
  env: ['LANG', 'TOKEN'],
  resources: { cpu_cores: 0.5, memory_mb: 64, disk_mb: 8, timeout_ms: 10_000, network_access: ['none'] },
};

function host(t: ReturnType<typeof tree>, env: Record<string, string> = {}): PolicyHost {
  return {
    realpath: (p) => realpath(p),
    mountSource: (path) => ({ kind: 'host', path }),
    env: (n) => env[n],
    protectedPaths: [t.policyFile, t.storeFile, t.cache],
  };
}

const request = (bindings: PolicyRequest['bindings'] = {}, extra: Partial<PolicyRequest> = {}): PolicyRequest => ({
  tool: fileStats,
  bindings,
  ...extra,
});

function grantSrc(t: ReturnType<typeof tree>, more: Partial<NonNullable<Policy['tools']>[string]> = {}): Policy {
  return {
    version: 1,
    tools: {
      'file-stats': {
        mounts: { '/workspace': [{ folder: t.src, access: 'read' }], '/out': [{ folder: join(t.src, 'sub'), access: 'read-write' }] },
        ...more,
      },
    },
  };
}

describe('deny by default', () => {
  it('an unlisted tool runs with no folder and no env, and is refused any folder', async () => {
    const t = tree();
    const empty: Policy = { version: 1 };
    const bare = await evaluatePolicy(empty, request(), host(t));
    expect(bare).toMatchObject({ decision: 'allow', rule: 'unlisted', mounts: [], env: {}, limits: { timeout_ms: 10_000, memory_mb: 64 } });
    const asked = await evaluatePolicy(empty, request({ '/workspace': t.src }), host(t));
    expect(asked).toMatchObject({ decision: 'deny' });
    if (asked.decision !== 'deny') throw new Error('unreachable');
    expect(asked.error.toJSON()).toMatchObject({
      code: 'E_POLICY_DENIED',
      details: { reason: 'not_granted', tool: 'file-stats', guest: '/workspace', folder: t.src },
      retryable: false,
    });
    expect(asked.error.message).toMatch(/corral policy grant file-stats --mount/);
  });

  it('a hint for a policy other than the default names it, so the command edits the file the server reads', async () => {
    const t = tree();
    const asked = await evaluatePolicy({ version: 1 }, request({ '/workspace': t.src }), { ...host(t), grantArgs: '--policy /etc/p.yaml' });
    expect(asked.decision === 'deny' && asked.error.message).toMatch(
      new RegExp(`corral policy grant file-stats --mount ${t.src}:/workspace --policy /etc/p\\.yaml$`),
    );
  });

  it('unlisted_tools: deny refuses an unlisted tool outright; deny: true refuses a listed one', async () => {
    const t = tree();
    const d1 = await evaluatePolicy({ version: 1, unlisted_tools: 'deny' }, request(), host(t));
    expect(d1.decision === 'deny' && d1.error.details.reason).toBe('unlisted_tool');
    const d2 = await evaluatePolicy({ version: 1, tools: { 'file-stats': { deny: true } } }, request(), host(t));
    expect(d2.decision === 'deny' && d2.error.details.reason).toBe('tool_denied');
  });

  it('a version outside the entry’s range is treated as unlisted', async () => {
    const t = tree();
    const d = await evaluatePolicy(grantSrc(t, { versions: '^2' }), request({ '/workspace': t.src }), host(t));
    expect(d.decision === 'deny' && d.error.details.reason).toBe('not_granted');
    const ok = await evaluatePolicy(grantSrc(t, { versions: '^1' }), request({ '/workspace': t.src }), host(t));
    expect(ok.decision).toBe('allow');
  });
});

describe('grants', () => {
  it('a granted folder and any folder inside it bind, on real paths, never wider than spec and grant', async () => {
    const t = tree();
    const policy = grantSrc(t);
    const d = await evaluatePolicy(policy, request({ '/workspace': t.src, '/out': join(t.src, 'sub') }), host(t));
    expect(d).toMatchObject({
      decision: 'allow',
      rule: 'listed',
      mounts: [
        { guest: '/workspace', access: 'read', source: { kind: 'host', path: t.src } },
        { guest: '/out', access: 'read-write', source: { kind: 'host', path: join(t.src, 'sub') } },
      ],
    });
    // Inside, through a symlink that stays inside: allowed, bound to the real path.
    const inner = await evaluatePolicy(policy, request({ '/workspace': join(t.src, 'link-in') }), host(t));
    expect(inner).toMatchObject({ decision: 'allow', mounts: [{ source: { path: join(t.src, 'sub') } }] });
    // Asking read-write where the grant (or the spec) says read.
    const wider = await evaluatePolicy(policy, request({ '/workspace': { folder: t.src, access: 'read-write' } }), host(t));
    expect(wider.decision === 'deny' && wider.error.details.reason).toBe('access_not_granted');
    // A read-write grant on a mount the spec declares read stays read.
    const rw = grantSrc(t);
    rw.tools!['file-stats']!.mounts!['/workspace'] = [{ folder: t.src, access: 'read-write' }];
    expect(await evaluatePolicy(rw, request({ '/workspace': t.src }), host(t))).toMatchObject({ mounts: [{ access: 'read' }] });
    // A narrower access asked for is kept.
    const narrow = await evaluatePolicy(policy, request({ '/out': { folder: join(t.src, 'sub'), access: 'read' } }), host(t));
    expect(narrow).toMatchObject({ decision: 'allow', mounts: [{ guest: '/out', access: 'read' }] });
  });

  it('refuses symlink and .. escapes from a granted folder, and a sibling with the same prefix', async () => {
    const t = tree();
    const policy = grantSrc(t);
    mkdirSync(`${t.src}-evil`);
    for (const folder of [
      join(t.src, 'link-out'),
      join(t.src, '..', 'secret'),
      join(t.src, 'sub', '..', '..', 'secret'),
      `${t.src}-evil`,
    ]) {
      const d = await evaluatePolicy(policy, request({ '/workspace': folder }), host(t));
      expect(d.decision, folder).toBe('deny');
      if (d.decision === 'deny') expect(d.error.details).toMatchObject({ reason: 'not_granted', folder: realpathSync(folder) });
    }
    // A granted folder that is itself a symlink grants what it points to now.
    symlinkSync(t.secret, join(t.base, 'home/alias'));
    const viaAlias: Policy = {
      version: 1,
      tools: { 'file-stats': { mounts: { '/workspace': [{ folder: join(t.base, 'home/alias'), access: 'read' }] } } },
    };
    expect(await evaluatePolicy(viaAlias, request({ '/workspace': t.secret }), host(t))).toMatchObject({ decision: 'allow' });
    expect((await evaluatePolicy(viaAlias, request({ '/workspace': t.src }), host(t))).decision).toBe('deny');
  });

  it('refuses a missing folder, an undeclared mount and a request that is not well formed', async () => {
    const t = tree();
    const policy = grantSrc(t);
    const missing = await evaluatePolicy(policy, request({ '/workspace': join(t.src, 'nope') }), host(t));
    expect(missing.decision === 'deny' && missing.error.details.reason).toBe('folder_missing');
    const undeclared = await evaluatePolicy(policy, request({ '/data': t.src }), host(t));
    expect(undeclared.decision === 'deny' && undeclared.error.details.reason).toBe('undeclared_mount');
    for (const bindings of [
      { [`/${'w'.repeat(300)}`]: t.src },
      { 'workspace/': t.src },
      { '/workspace': 'relative/path' },
      { '/workspace': `${t.src}\0x` },
      { '/workspace': 42 },
      ['/x'],
    ]) {
      const d = await evaluatePolicy(policy, request(bindings as never), host(t));
      expect(d.decision === 'deny' && d.error.details.reason).toBe('bad_request');
    }
    const many = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`/m${i}`, t.src]));
    const tooMany = await evaluatePolicy(policy, request(many), host(t));
    expect(tooMany.decision === 'deny' && tooMany.error.details.reason).toBe('bad_request');
  });

  it('never binds a folder holding the policy file or the store, or one inside the cache, even when granted', async () => {
    const t = tree();
    const everything: Policy = {
      version: 1,
      tools: {
        'file-stats': {
          mounts: { '/workspace': [{ folder: t.base, access: 'read' }], '/out': [{ folder: t.base, access: 'read-write' }] },
        },
      },
    };
    mkdirSync(join(t.cache, 'components'));
    for (const folder of [t.base, t.state, join(t.cache, 'components'), t.cache]) {
      const d = await evaluatePolicy(everything, request({ '/workspace': folder }), host(t));
      expect(d.decision, folder).toBe('deny');
      if (d.decision === 'deny') expect(d.error.details.reason).toBe('protected_folder');
    }
    // The same through a symlink to the state folder.
    symlinkSync(t.state, join(t.src, 'to-state'));
    const d = await evaluatePolicy(everything, request({ '/workspace': join(t.src, 'to-state') }), host(t));
    expect(d.decision === 'deny' && d.error.details.reason).toBe('protected_folder');
    // Files that do not exist yet are protected where they will be.
    const later = await evaluatePolicy(everything, request({ '/workspace': t.base }), {
      ...host(t),
      protectedPaths: [join(t.base, 'new/dir/x.db')],
    });
    expect(later.decision === 'deny' && later.error.details.reason).toBe('protected_folder');
    expect((await evaluatePolicy(everything, request({ '/workspace': t.src }), host(t))).decision).toBe('allow');
  });

  it('protects a path written link/../x where the OS puts it, not where its name says', async () => {
    const t = tree();
    const grant: Policy = { version: 1, tools: { 'file-stats': { mounts: { '/workspace': [{ folder: t.secret, access: 'read' }] } } } };
    // src/link-out -> home/secret: src/link-out/../secret/policy.yaml is in home/secret (by name it would be src/secret/).
    const guarded = { ...host(t), protectedPaths: [join(t.src, 'link-out') + '/../secret/policy.yaml'] };
    const d = await evaluatePolicy(grant, request({ '/workspace': t.secret }), guarded);
    expect(d.decision === 'deny' && d.error.details.reason).toBe('protected_folder');
  });

  // Only where the links led was guarded: a tool that may write the folder holding a link on the way to the
  // policy (~/.config/corral/policy.yaml -> ~/dotfiles/...) could replace the link with its own policy.
  it('protects the folder holding a link on the way to the policy, not only where the link leads', async () => {
    const t = tree();
    const rw = (folder: string): Policy => ({
      version: 1,
      tools: { 'file-stats': { mounts: { '/out': [{ folder, access: 'read-write' }] } } },
    });
    const cfg = join(t.src, 'sub');
    writeFileSync(t.policyFile, 'version: 1\n');
    symlinkSync(t.policyFile, join(cfg, 'policy.yaml')); // the policy file is a link to state/policy.yaml
    symlinkSync(t.state, join(t.src, 'state-link')); // a folder on the way is a link to state/
    for (const policyPath of [join(cfg, 'policy.yaml'), join(t.src, 'state-link', 'policy.yaml')]) {
      const guarded = { ...host(t), protectedPaths: [policyPath] };
      const d = await evaluatePolicy(rw(cfg), request({ '/out': cfg }), guarded);
      const holding = policyPath.startsWith(cfg) ? d : await evaluatePolicy(rw(t.src), request({ '/out': t.src }), guarded);
      expect(holding.decision === 'deny' && holding.error.details.reason, policyPath).toBe('protected_folder');
      // Where the link leads stays guarded, and a folder beside the link is not.
      const target = await evaluatePolicy(rw(t.state), request({ '/out': t.state }), guarded);
      expect(target.decision === 'deny' && target.error.details.reason).toBe('protected_folder');
    }
    const beside = await evaluatePolicy(rw(t.secret), request({ '/out': t.secret }), {
      ...host(t),
      protectedPaths: [join(cfg, 'policy.yaml')],
    });
    expect(beside.decision).toBe('allow');
  });

  it('keeps a mount inside the caller’s roots when the caller gives roots', async () => {
    const t = tree();
    const policy = grantSrc(t);
    const inRoots = await evaluatePolicy(
      policy,
      request({ '/workspace': t.src }, { caller: { kind: 'mcp', roots: [join(t.base, 'home')] } }),
      host(t),
    );
    expect(inRoots.decision).toBe('allow');
    const outside = await evaluatePolicy(policy, request({ '/workspace': t.src }, { caller: { kind: 'mcp', roots: [t.secret] } }), host(t));
    expect(outside.decision === 'deny' && outside.error.details.reason).toBe('outside_roots');
    const none = await evaluatePolicy(policy, request({ '/workspace': t.src }, { caller: { kind: 'mcp', roots: [] } }), host(t));
    expect(none.decision === 'deny' && none.error.details.reason).toBe('outside_roots');
  });

  it('gives env values the spec declares (fixed or from the host) and lowers limits, never raising them', async () => {
    const t = tree();
    const policy = grantSrc(t, {
      env: { LANG: 'C.UTF-8', TOKEN: { from_host: 'HOST_TOKEN' }, OTHER: 'x' },
      resources: { timeout_ms: 2000, memory_mb: 128, disk_mb: 0 },
      approval: 'required',
      approval_scope: 'folder',
    });
    const d = await evaluatePolicy(policy, request(), host(t, { HOST_TOKEN: 't0k' }));
    expect(d).toMatchObject({
      decision: 'approval_required',
      max_scope: 'folder',
      env: { LANG: 'C.UTF-8', TOKEN: 't0k' },
      limits: { timeout_ms: 2000, memory_mb: 64, disk_mb: 0 },
    });
    if (d.decision === 'deny') throw new Error('unreachable');
    expect(d.env).not.toHaveProperty('OTHER');
    expect(d.warnings.join('\n')).toMatch(/OTHER is not declared[\s\S]*memory_mb 128 is above/);
    const noHost = await evaluatePolicy(policy, request(), host(t));
    expect(noHost).toMatchObject({ env: { LANG: 'C.UTF-8' } });
    if (noHost.decision !== 'deny') expect(noHost.env).not.toHaveProperty('TOKEN');
  });
});

describe('the policy file format', () => {
  it('ships its JSON Schema as a file in @corral/core, equal to policySchema', () => {
    const file = JSON.parse(readFileSync(join(ROOT, 'packages/core/policy.schema.json'), 'utf8'));
    expect(file).toEqual(JSON.parse(JSON.stringify(policySchema)));
  });

  it('lists every problem by JSON path, and YAML syntax errors by line and column', () => {
    const bad = validatePolicy({
      version: 2,
      unlisted_tools: 'maybe',
      tools: {
        'File Stats': {},
        'file-stats': {
          versions: 'not a range',
          mounts: { '/workspace': [{ folder: 'relative', access: 'write' }], '/a/../b': [] },
          env: { TZ: 'x', 'BAD-NAME': 'y' },
          resources: { memory_mb: 99999 },
          approval: 'sometimes',
        },
      },
      extra: true,
    });
    expect(bad.ok).toBe(false);
    const paths = bad.ok ? [] : bad.problems.map((p) => p.path);
    for (const p of [
      '/version',
      '/unlisted_tools',
      '/tools',
      '/tools/file-stats/mounts/~1workspace/0/access',
      '/tools/file-stats/resources/memory_mb',
      '/tools/file-stats/approval',
    ])
      expect(paths).toContain(p);
    expect(() => parsePolicyText('version: 1\ntools:\n  file-stats:\n    mounts: [unclosed\n', '/p.yaml')).toThrow(
      /Invalid policy \/p\.yaml: .*line \d+, column \d+/,
    );
    expect(() => parsePolicyText('version: 1\nversion: 1\n', '/p.yaml')).toThrow(/line 2/);
    expect(() => parsePolicyText('version: 1\ntools:\n  __proto__: { deny: true }\n', '/p.yaml')).toThrow(/\/tools: must match pattern/);
    expect(() => parsePolicyText('version: 1\n---\nversion: 1\n', '/p.yaml')).toThrow(/Invalid policy/);
    // Aliases cannot expand into a huge document.
    const bomb = ['a: &a [x, x, x, x, x, x, x, x, x, x]'];
    for (let i = 0; i < 8; i++)
      bomb.push(
        `${String.fromCharCode(98 + i)}: &${String.fromCharCode(98 + i)} [${Array(10)
          .fill(`*${String.fromCharCode(97 + i)}`)
          .join(', ')}]`,
      );
    expect(() => parsePolicyText(`version: 1\n${bomb.join('\n')}\n`, '/p.yaml')).toThrow(/Excessive alias count/);
    expect(parsePolicyText('', '/p.yaml')).toEqual({ version: 1 });
    expect(parsePolicyText('# only a comment\n', '/p.yaml')).toEqual({ version: 1 });
  });

  it('PolicyFile sees every edit at the next load, even one of the same size within the same clock tick', async () => {
    const t = tree();
    const file = new PolicyFile(t.policyFile);
    expect(await file.load()).toEqual({ version: 1 }); // no file yet: the empty policy
    const text = (folder: string) =>
      `version: 1\ntools:\n  file-stats:\n    mounts:\n      /workspace: [{ folder: ${folder}, access: read }]\n`;
    for (let i = 0; i < 20; i++) {
      const folder = `/x/${String(i).padStart(3, '0')}`; // every version the same size
      writeFileSync(t.policyFile, text(folder));
      expect((await file.load()).tools?.['file-stats']?.mounts?.['/workspace']?.[0]?.folder).toBe(folder);
    }
    writeFileSync(t.policyFile, 'version: [');
    await expect(file.load()).rejects.toMatchObject({ code: 'E_INPUT_VALIDATION', message: /line 1/ });
    writeFileSync(t.policyFile, text('/x/ok'));
    expect((await file.load()).tools?.['file-stats']).toBeDefined();
    mkdirSync(join(t.base, 'dir.yaml'));
    await expect(new PolicyFile(join(t.base, 'dir.yaml')).load()).rejects.toMatchObject({ message: /not a regular file/ });
    writeFileSync(join(t.base, 'big.yaml'), `# ${'x'.repeat(1024 * 1024)}\nversion: 1\n`);
    await expect(new PolicyFile(join(t.base, 'big.yaml')).load()).rejects.toMatchObject({ message: /larger than 1048576 bytes/ });
  });

  it('reads the example in the README', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const example = /```yaml\n(# corral\.policy\.yaml[\s\S]*?)```/.exec(readme)?.[1];
    expect(example).toBeDefined();
    const policy = parsePolicyText(example!, 'README');
    expect(policy.tools?.['file-stats']?.mounts?.['/workspace']?.[0]?.access).toBe('read');
  });
});
