import { readFile, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { PREPARED_FORMAT, type PreparedComponent } from '@corral/wasi/host-kit';
import { makeFolders } from './folders.js';

/** Entries made by another transpiler version are never read. */
const FORMAT = PREPARED_FORMAT.replace(/[^A-Za-z0-9.-]/g, '_');

/** Where Corral keeps derived files: $CORRAL_CACHE_DIR, else $XDG_CACHE_HOME/corral, else ~/.cache/corral. */
export function defaultCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.CORRAL_CACHE_DIR) return env.CORRAL_CACHE_DIR;
  return join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'corral');
}

/** What meta.json holds: the component's imports, its module names, and each file's SHA-256. */
interface Meta {
  imports: string[];
  modules: string[];
  sha256: Record<string, string>;
  /** SHA-256 of PREVIEW1_FILE, when the component is an adapted preview1 module (PreparedComponent.preview1). */
  preview1?: string;
}

/**
 * PreparedComponent.preview1's file. jco names modules `<name>.core<n>.wasm`:
 * never this; an entry whose modules hold the name anyway keeps no preview1.
 */
const PREVIEW1_FILE = 'preview1.wasm';

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/**
 * Transpiled components on disk, keyed by the component's SHA-256, so the
 * ~1 s jco transpile happens once per component per machine, not per process.
 * An entry is written whole or not at all (a folder renamed into place), and
 * read only when every file has the SHA-256 its meta.json records: a
 * damaged, incomplete or foreign entry is a miss, and is replaced by the
 * next `set`. A failed write only costs speed.
 */
export class ComponentCache {
  readonly dir: string;

  constructor(dir = join(defaultCacheDir(), 'components')) {
    this.dir = dir;
  }

  /** The entry's folder; a key is a SHA-256 in hex, never a path. */
  #entry(sha256: string): string {
    if (!/^[0-9a-f]{64}$/.test(sha256)) throw new Error('a cache key is a SHA-256 in hex');
    return join(this.dir, `${sha256}-${FORMAT}`);
  }

  async get(key: string): Promise<PreparedComponent | undefined> {
    const dir = this.#entry(key);
    try {
      const meta: unknown = JSON.parse(await readFile(join(dir, 'meta.json'), 'utf8'));
      // Every file hashed is read and no other: a meta.json that lost a module from its list is damaged too.
      if (!isMeta(meta) || !sameNames(Object.keys(meta.sha256), ['glue.js', ...meta.modules])) return undefined;
      const read = async (file: string) => {
        const bytes = new Uint8Array(await readFile(join(dir, safeName(file))));
        if (sha256(bytes) !== meta.sha256[file]) throw new Error(`${file} is damaged`);
        return bytes;
      };
      const glue = new TextDecoder('utf-8', { fatal: true }).decode(await read('glue.js'));
      const modules: Record<string, Uint8Array> = Object.create(null);
      for (const name of meta.modules) modules[name] = await read(name);
      if (meta.preview1 === undefined || meta.modules.includes(PREVIEW1_FILE)) return { glue, modules, imports: meta.imports };
      // Without it, the component would run through its glue: read and checked like the rest.
      meta.sha256[PREVIEW1_FILE] = meta.preview1;
      return { glue, modules, imports: meta.imports, preview1: await read(PREVIEW1_FILE) };
    } catch {
      return undefined;
    }
  }

  async set(key: string, prepared: PreparedComponent): Promise<void> {
    const final = this.#entry(key);
    const temp = `${final}.tmp-${process.pid}-${Date.now()}`;
    const stale = `${final}.old-${process.pid}-${Date.now()}`;
    try {
      await makeFolders(temp);
      const files: Record<string, Uint8Array> = { 'glue.js': new TextEncoder().encode(prepared.glue), ...prepared.modules };
      const meta: Meta = { imports: prepared.imports, modules: Object.keys(prepared.modules), sha256: {} };
      for (const [name, bytes] of Object.entries(files)) {
        await writeFile(join(temp, safeName(name)), bytes);
        meta.sha256[name] = sha256(bytes);
      }
      if (prepared.preview1 && !(PREVIEW1_FILE in files)) {
        await writeFile(join(temp, PREVIEW1_FILE), prepared.preview1);
        meta.preview1 = sha256(prepared.preview1);
      }
      // meta.json last: an entry without it is incomplete and ignored.
      await writeFile(join(temp, 'meta.json'), JSON.stringify(meta));
      try {
        await rename(temp, final);
      } catch {
        // An entry is there (set is called only when it could not be read): moved aside, then replaced.
        await rename(final, stale);
        await rename(temp, final);
      }
    } catch {
      // Another process may have put its own entry in place meanwhile: that one stays.
    } finally {
      await rm(temp, { recursive: true, force: true }).catch(() => {});
      await rm(stale, { recursive: true, force: true }).catch(() => {});
    }
  }

  /** Remove every cached entry (`corral cache clear`). */
  async clear(): Promise<number> {
    const names = await readdir(this.dir).catch(() => [] as string[]);
    await Promise.all(names.map((n) => rm(join(this.dir, n), { recursive: true, force: true })));
    return names.length;
  }
}

function sameNames(a: string[], b: string[]): boolean {
  return a.length === b.length && [...a].sort().join('\n') === [...b].sort().join('\n');
}

function isMeta(value: unknown): value is Meta {
  if (typeof value !== 'object' || value === null) return false;
  const { imports, modules, sha256: hashes, preview1 } = value as Record<string, unknown>;
  const strings = (list: unknown) => Array.isArray(list) && list.every((item) => typeof item === 'string');
  return (
    strings(imports) &&
    strings(modules) &&
    typeof hashes === 'object' &&
    hashes !== null &&
    (preview1 === undefined || typeof preview1 === 'string')
  );
}

/** Module names come from jco (`tool.core.wasm`); never let one name a path. */
function safeName(name: string): string {
  if (!/^[A-Za-z0-9._-]+$/.test(name) || name.startsWith('.')) throw new Error(`unexpected module name ${name}`);
  return name;
}
