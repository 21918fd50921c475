/**
 * The policy gate for Node: the PolicyGate of @corral/core, reading
 * corral.policy.yaml (again whenever it changes), comparing folders on the
 * real paths the OS gives (fs.realpath: symlinks, `..`, and the case a
 * case-insensitive filesystem stores), taking `from_host` values from this
 * process's environment, and refusing any mount that would contain the
 * policy file, the snapshot store or the transpile cache.
 */
import { realpath } from 'node:fs/promises';
import { isAbsolute, resolve } from 'node:path';
import { PolicyGate, type PolicyGateOptions, type Store } from '@corral/core';
import { defaultCacheDir } from './cache.js';
import { BUNDLED_TOOLS_DIR } from './corral.js';
import { PolicyFile, defaultPolicyPath } from './policy-file.js';
import type { HostMountSource } from './mounts.js';
import { PACKAGE_DIR, packageRequire, packageRoot } from './package-files.js';

export interface OpenPolicyGateOptions extends Omit<PolicyGateOptions, 'policy' | 'host' | 'store'> {
  /** Where approvals and the audit trail are kept: the Corral's own store (`corral.store`), so `corral approve` reaches it. */
  store: Store;
  /** The policy file. Default: defaultPolicyPath() ($CORRAL_POLICY, else $XDG_CONFIG_HOME/corral/policy.yaml, else ~/.config/corral/policy.yaml). */
  policyPath?: string;
  /** The store's file, which no mount may contain. Default: `store.location` when it is an absolute path. */
  storePath?: string;
  /** The transpile cache, which no mount may contain or be inside. Default: defaultCacheDir(). */
  cacheDir?: string;
  /**
   * More files or folders no mount may contain or be inside: a server passes its `--tools` folders
   * (a tool that could write there could replace another tool and get that tool's grants).
   * Corral's own code (corralCodePaths()) is always protected.
   */
  protectedPaths?: string[];
  /** Where `from_host` values come from. Default: process.env. */
  env?: Record<string, string | undefined>;
}

/** A PolicyGate over corral.policy.yaml for a Node host. See PolicyGate in @corral/core for the API. */
export function openPolicyGate(options: OpenPolicyGateOptions): PolicyGate {
  const { store, policyPath, storePath, cacheDir, protectedPaths, env, ...rest } = options;
  const policy = new PolicyFile(policyPath ?? defaultPolicyPath());
  // Hints say how to grant; a policy other than the default needs its path in the command.
  const grantArgs =
    policyPath !== undefined && policy.location !== defaultPolicyPath() ? `--policy ${shellWord(policy.location)}` : undefined;
  const storeFile = storePath ?? (isAbsolute(store.location) ? store.location : undefined);
  const guarded = [
    // Absolute already, with any `link/..` kept: resolve() would guard the folder beside the link instead.
    policy.location,
    ...[...(storeFile ? [storeFile] : []), cacheDir ?? defaultCacheDir(), ...corralCodePaths(), ...(protectedPaths ?? [])].map((path) =>
      resolve(path),
    ), // relative ones ($CORRAL_CACHE_DIR=.cache) are where the process uses them: under its cwd, not under /
  ];
  const source = env ?? process.env;
  return new PolicyGate({
    ...rest,
    store,
    policy,
    host: {
      realpath: (path) => realpath(path),
      mountSource: (path): HostMountSource => ({ kind: 'host', path }),
      ...(grantArgs ? { grantArgs } : {}),
      env: (name) => (Object.hasOwn(source, name) ? source[name] : undefined),
      protectedPaths: guarded,
    },
  });
}

let codePaths: string[] | undefined;

/**
 * Folders holding code Corral runs outside the sandbox, or tools it loads: its own packages, every
 * `node_modules` folder their imports resolve through, and the bundled tools. Like the transpile cache,
 * none is mountable: a tool that could write there could change Corral itself at its next start (a clone
 * of Corral inside a project folder granted read-write, as the README's MCP set-up suggests), or replace a
 * bundled tool and get that tool's grants.
 */
export function corralCodePaths(): string[] {
  if (codePaths) return [...codePaths];
  const paths = new Set<string>([PACKAGE_DIR, BUNDLED_TOOLS_DIR]);
  for (const p of packageRequire.resolve.paths('yaml') ?? []) paths.add(p);
  for (const name of ['@corral/core', '@corral/wasi', '@corral/mcp', '@corral/workflow']) {
    try {
      paths.add(packageRoot(packageRequire.resolve(name)));
    } catch {
      // not installed (@corral/mcp and @corral/workflow are optional for a host that never serves them)
    }
  }
  codePaths = [...paths];
  return [...codePaths];
}

/** A path as one shell word (POSIX sh). */
export function shellWord(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`;
}
