import { mkdir, readFile, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { PREPARED_FORMAT, type PreparedComponent } from '@corral/wasi/host-kit';

/** Entries made by another transpiler version are never read. */
const FORMAT = PREPARED_FORMAT.replace(/[^A-Za-z0-9.-]/g, '_');

/** Where Corral keeps derived files: $CORRAL_CACHE_DIR, else $XDG_CACHE_HOME/corral, else ~/.cache/corral. */
export function defaultCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.CORRAL_CACHE_DIR) return env.CORRAL_CACHE_DIR;
  return join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'corral');
}

/**
 * Transpiled components on disk, keyed by the component's SHA-256, so the
 * ~1 s jco transpile happens once per component per machine, not per process.
 * A damaged entry is treated as a miss; a failed write only costs speed.
 */
export class ComponentCache {
  readonly dir: string;

  constructor(dir = join(defaultCacheDir(), 'components')) {
    this.dir = dir;
  }

  #entry(sha256: string): string {
    return join(this.dir, `${sha256}-${FORMAT}`);
  }

  async get(sha256: string): Promise<PreparedComponent | undefined> {
    const dir = this.#entry(sha256);
    try {
      const meta = JSON.parse(await readFile(join(dir, 'meta.json'), 'utf8')) as { imports: string[]; modules: string[] };
      const glue = await readFile(join(dir, 'glue.js'), 'utf8');
      const modules: Record<string, Uint8Array> = {};
      for (const name of meta.modules) modules[name] = new Uint8Array(await readFile(join(dir, safeName(name))));
      return { glue, modules, imports: meta.imports };
    } catch {
      return undefined;
    }
  }

  async set(sha256: string, prepared: PreparedComponent): Promise<void> {
    const final = this.#entry(sha256);
    const temp = `${final}.tmp-${process.pid}-${Date.now()}`;
    try {
      await mkdir(temp, { recursive: true });
      await writeFile(join(temp, 'glue.js'), prepared.glue);
      for (const [name, bytes] of Object.entries(prepared.modules)) await writeFile(join(temp, safeName(name)), bytes);
      // meta.json last: an entry without it is incomplete and ignored.
      await writeFile(join(temp, 'meta.json'), JSON.stringify({ imports: prepared.imports, modules: Object.keys(prepared.modules) }));
      await rename(temp, final);
    } catch {
      await rm(temp, { recursive: true, force: true }).catch(() => {});
    }
  }

  /** Remove every cached entry (`corral cache clear`). */
  async clear(): Promise<number> {
    const names = await readdir(this.dir).catch(() => [] as string[]);
    await Promise.all(names.map((n) => rm(join(this.dir, n), { recursive: true, force: true })));
    return names.length;
  }
}

/** Module names come from jco (`tool.core.wasm`); never let one name a path. */
function safeName(name: string): string {
  if (!/^[A-Za-z0-9._-]+$/.test(name) || name.startsWith('.')) throw new Error(`unexpected module name ${name}`);
  return name;
}
