/**
 * The policy gate for Node: the PolicyGate of @corral/core, reading
 * corral.policy.yaml (again whenever it changes), comparing folders on the
 * real paths the OS gives (fs.realpath: symlinks, `..`, and the case a
 * case-insensitive filesystem stores), taking `from_host` values from this
 * process's environment, and refusing any mount that would contain the
 * policy file, the snapshot store or the transpile cache.
 */
import { realpath } from 'node:fs/promises';
import { isAbsolute } from 'node:path';
import { PolicyGate, type PolicyGateOptions, type Store } from '@corral/core';
import { defaultCacheDir } from './cache.js';
import { PolicyFile, defaultPolicyPath } from './policy-file.js';

export interface OpenPolicyGateOptions extends Omit<PolicyGateOptions, 'policy' | 'host' | 'store'> {
  /** Where approvals and the audit trail are kept: the Corral's own store (`corral.store`), so `corral approve` reaches it. */
  store: Store;
  /** The policy file. Default: defaultPolicyPath() ($CORRAL_POLICY, else $XDG_CONFIG_HOME/corral/policy.yaml, else ~/.config/corral/policy.yaml). */
  policyPath?: string;
  /** The store's file, which no mount may contain. Default: `store.location` when it is an absolute path. */
  storePath?: string;
  /** The transpile cache, which no mount may contain or be inside. Default: defaultCacheDir(). */
  cacheDir?: string;
  /** More files or folders no mount may contain or be inside. */
  protectedPaths?: string[];
  /** Where `from_host` values come from. Default: process.env. */
  env?: Record<string, string | undefined>;
}

/** A PolicyGate over corral.policy.yaml for a Node host. See PolicyGate in @corral/core for the API. */
export function openPolicyGate(options: OpenPolicyGateOptions): PolicyGate {
  const { store, policyPath, storePath, cacheDir, protectedPaths, env, ...rest } = options;
  const policy = new PolicyFile(policyPath ?? defaultPolicyPath());
  const storeFile = storePath ?? (isAbsolute(store.location) ? store.location : undefined);
  const guarded = [policy.location, ...(storeFile ? [storeFile] : []), cacheDir ?? defaultCacheDir(), ...(protectedPaths ?? [])];
  const source = env ?? process.env;
  return new PolicyGate({
    ...rest,
    store,
    policy,
    host: {
      realpath: (path) => realpath(path),
      env: (name) => (Object.hasOwn(source, name) ? source[name] : undefined),
      protectedPaths: guarded,
    },
  });
}
