/**
 * corral.policy.yaml on disk: where it lives, reading it (again whenever it
 * changes, so a running server sees a revoke at its next call), and editing
 * it atomically for `corral policy grant|revoke` with the user's comments
 * kept. Nothing a tool call reaches writes it: only `updatePolicyFile`
 * does, and only the CLI calls that.
 */
import { constants } from 'node:fs';
import { open, readlink, realpath, rename, rm, stat, type FileHandle } from 'node:fs/promises';
import { homedir } from 'node:os';
import { basename, dirname, isAbsolute, join, sep } from 'node:path';
import {
  Document,
  isMap,
  parseDocument,
  type ParseOptions,
  type DocumentOptions,
  type SchemaOptions,
  type ToJSOptions,
} from '@corral/workflow/deps';
import { CorralError, ErrorCodes, POLICY_VERSION, validatePolicy, type Policy, type PolicySource } from '@corral/core';
import { absoluteAsGiven, makeFolders } from './folders.js';

/** $CORRAL_POLICY, else $XDG_CONFIG_HOME/corral/policy.yaml, else ~/.config/corral/policy.yaml. */
export function defaultPolicyPath(env: NodeJS.ProcessEnv = process.env): string {
  if (env.CORRAL_POLICY) return absoluteAsGiven(env.CORRAL_POLICY);
  return join(env.XDG_CONFIG_HOME || join(homedir(), '.config'), 'corral', 'policy.yaml');
}

/** A file changed this recently is re-read at every load rather than trusted by its stamp. */
const RACY_NS = 2_000_000_000n;

/** Largest policy file Corral reads. */
export const MAX_POLICY_BYTES = 1024 * 1024;

/** What a file with no policy in it (missing, or empty) means: no tool is listed. */
export const EMPTY_POLICY: Policy = { version: POLICY_VERSION };

// YAML 1.2 core schema only (no !!binary, no merge keys), one document, few aliases: a
// policy is plain data, and a file of aliases must not expand into gigabytes.
const YAML_OPTIONS: ParseOptions & DocumentOptions & SchemaOptions = {
  schema: 'core',
  uniqueKeys: true,
  prettyErrors: true,
  strict: true,
  merge: false,
};
const TO_JS: ToJSOptions = { maxAliasCount: 50 };

function invalid(location: string, problems: { path: string; message: string }[]): CorralError {
  const n = problems.length;
  const text = problems.map((p) => `${p.path}: ${p.message}`).join('; ');
  return new CorralError(ErrorCodes.INPUT_VALIDATION, `Invalid policy ${location}: ${n} problem${n === 1 ? '' : 's'}: ${text}`, {
    source: location,
    problems,
  });
}

/** The YAML document of a policy's text; E_INPUT_VALIDATION (with line:column) when it is not YAML. */
export function parsePolicyDocument(text: string, location: string): Document.Parsed {
  const doc = parseDocument(text, YAML_OPTIONS);
  if (doc.errors.length > 0) {
    throw invalid(
      location,
      doc.errors.map((e) => ({
        path: e.linePos ? `line ${e.linePos[0].line}, column ${e.linePos[0].col}` : '/',
        message: e.message.split('\n')[0]!,
      })),
    );
  }
  return doc;
}

/** A policy from a document: checked against policySchema; an empty document is the empty policy. */
export function policyFromDocument(doc: Document, location: string): Policy {
  let raw: unknown;
  try {
    raw = doc.toJS(TO_JS);
  } catch (err) {
    throw invalid(location, [{ path: '/', message: err instanceof Error ? err.message : String(err) }]);
  }
  if (raw === null || raw === undefined) return { ...EMPTY_POLICY };
  const result = validatePolicy(raw);
  if (!result.ok) throw invalid(location, result.problems);
  return result.policy;
}

/** Parse and validate a policy's text (YAML, or JSON, which is YAML too). */
export function parsePolicyText(text: string, location = 'policy'): Policy {
  return policyFromDocument(parsePolicyDocument(text, location), location);
}

interface Snapshot {
  /** Identity and change stamp of the file read: device, inode, size, mtime and ctime in ns. */
  stamp: string;
  text: string;
}

/** Read the file through one descriptor (never blocking on a FIFO), with the stamp of what was read; null when it does not exist. */
async function readPolicy(location: string): Promise<Snapshot | null> {
  let fh: FileHandle;
  try {
    fh = await open(location, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new CorralError(ErrorCodes.INPUT_VALIDATION, `Policy ${location} cannot be read: ${(err as Error).message}`, {
      source: location,
    });
  }
  try {
    const st = await fh.stat({ bigint: true });
    if (!st.isFile()) throw new CorralError(ErrorCodes.INPUT_VALIDATION, `Policy ${location} is not a regular file.`, { source: location });
    if (st.size > BigInt(MAX_POLICY_BYTES))
      throw new CorralError(ErrorCodes.INPUT_VALIDATION, `Policy ${location} is larger than ${MAX_POLICY_BYTES} bytes.`, {
        source: location,
      });
    const buffer = Buffer.alloc(MAX_POLICY_BYTES + 1);
    let length = 0;
    for (;;) {
      const { bytesRead } = await fh.read(buffer, length, buffer.length - length, length);
      if (bytesRead === 0) break;
      length += bytesRead;
      if (length > MAX_POLICY_BYTES)
        throw new CorralError(ErrorCodes.INPUT_VALIDATION, `Policy ${location} is larger than ${MAX_POLICY_BYTES} bytes.`, {
          source: location,
        });
    }
    const text = new TextDecoder('utf-8', { fatal: true }).decode(buffer.subarray(0, length));
    return { stamp: stampOf(st), text };
  } catch (err) {
    if (err instanceof CorralError) throw err;
    throw new CorralError(ErrorCodes.INPUT_VALIDATION, `Policy ${location} cannot be read: ${(err as Error).message}`, {
      source: location,
    });
  } finally {
    await fh.close();
  }
}

function stampOf(st: { dev: bigint; ino: bigint; size: bigint; mtimeNs: bigint; ctimeNs: bigint }): string {
  return `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
}

/**
 * The policy file as a PolicySource: `load()` stats the file before every
 * decision (one system call) and reads and checks it again only when it
 * changed — replaced by a rename, edited in place, removed — or when it
 * changed in the last two seconds, too recently for its stamp to be trusted. A file that is
 * missing or empty is the empty policy (no tool listed); one that cannot be
 * read or is invalid makes `load` throw, and the gate refuses every call
 * until it is fixed (fail closed), saying why.
 */
export class PolicyFile implements PolicySource {
  readonly location: string;
  #stamp: string | undefined;
  /** The text the cached policy was parsed from (null: no file). */
  #text: string | null | undefined;
  #cached: Policy | CorralError | undefined;

  constructor(path: string = defaultPolicyPath()) {
    this.location = absoluteAsGiven(path);
  }

  async load(): Promise<Policy> {
    let stamp: string;
    let recent = false;
    try {
      const st = await stat(this.location, { bigint: true });
      stamp = stampOf(st);
      // File times tick in jiffies, and a replaced file may get the old inode number back: a file
      // changed in the last two seconds could change again without its stamp changing ("racily
      // clean", as git calls it), so it is read and compared, not trusted.
      recent = BigInt(Date.now()) * 1_000_000n - (st.mtimeNs > st.ctimeNs ? st.mtimeNs : st.ctimeNs) < RACY_NS;
    } catch (err) {
      stamp = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'missing' : `error:${(err as NodeJS.ErrnoException).code}`;
    }
    if (stamp !== this.#stamp || recent || this.#cached === undefined) {
      // The stamp kept is the one of the bytes read (fstat of the descriptor read from), so a change
      // after the stat above is seen at the next load, never missed.
      try {
        const read = await readPolicy(this.location);
        const text = read ? read.text : null;
        this.#stamp = read ? read.stamp : 'missing';
        if (text !== this.#text || this.#cached === undefined || this.#cached instanceof CorralError) {
          this.#text = text;
          this.#cached = text === null ? { ...EMPTY_POLICY } : parsePolicyText(text, this.location);
        }
      } catch (err) {
        this.#stamp = stamp;
        this.#text = undefined;
        this.#cached =
          err instanceof CorralError ? err : new CorralError(ErrorCodes.INPUT_VALIDATION, String(err), { source: this.location });
      }
    }
    if (this.#cached instanceof CorralError) throw this.#cached;
    return structuredClone(this.#cached);
  }

  /** Whether the file exists (for messages). */
  async exists(): Promise<boolean> {
    try {
      await stat(this.location);
      return true;
    } catch {
      return false;
    }
  }
}

const NEW_FILE_HEADER = ` Corral policy: what tools called through MCP or HTTP may touch.
 Edit it with \`corral policy grant|revoke\` (comments are kept) or by hand;
 schema: @corral/core/policy.schema.json. Deny by default: a tool not
 listed here gets no host folder and no environment variable.`;

/**
 * Change the policy file atomically: under a lock file (so two `corral
 * policy` commands cannot lose each other's change), edit the parsed YAML
 * document (its comments and layout stay), check the result against the
 * schema, write it to a temporary file beside it, fsync, and rename it over
 * the old one. A file that does not parse is refused, not overwritten.
 * Returns the policy as written.
 */
export async function updatePolicyFile(path: string, edit: (doc: Document) => void): Promise<Policy> {
  // A policy file that is a symlink (kept in a dotfiles repository, say) is edited where it points: the rename
  // replaces the file, not the link.
  let location = path;
  try {
    location = await plannedRealpath(path);
    return await updateAt(location, edit);
  } catch (err) {
    // A place the system refuses (a folder under /proc, a file in the way, no permission) is the user's to change.
    const code = (err as NodeJS.ErrnoException | null)?.code;
    if (err instanceof CorralError || typeof code !== 'string') throw err;
    throw new CorralError(ErrorCodes.INPUT_VALIDATION, `Cannot write the policy file ${location}: ${(err as Error).message}`, {
      source: location,
      cause: code,
    });
  }
}

async function updateAt(location: string, edit: (doc: Document) => void): Promise<Policy> {
  const dir = dirname(location);
  await makeFolders(dir, 0o700);
  const release = await lock(`${location}.lock`);
  try {
    const current = await readPolicy(location);
    let doc: Document;
    if (current === null || current.text.trim() === '') {
      doc = new Document({ version: POLICY_VERSION, tools: {} }, YAML_OPTIONS);
      doc.commentBefore = NEW_FILE_HEADER;
    } else {
      doc = parsePolicyDocument(current.text, location);
      policyFromDocument(doc, location); // refuse to build on a file that is already invalid
      if (!isMap(doc.contents)) throw invalid(location, [{ path: '/', message: 'must be a mapping' }]);
    }
    edit(doc);
    const text = doc.toString({ lineWidth: 0 });
    const policy = parsePolicyText(text, location);
    const mode = current === null ? 0o600 : (await stat(location)).mode & 0o777;
    const temp = join(dir, `.${basename(location)}.${process.pid}.${crypto.randomUUID()}.tmp`);
    const fh = await open(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, mode);
    try {
      await fh.writeFile(text, 'utf8');
      await fh.sync();
    } finally {
      await fh.close();
    }
    try {
      await rename(temp, location);
    } catch (err) {
      await rm(temp, { force: true });
      throw err;
    }
    // The rename itself is durable once the folder is synced.
    const dh = await open(dir, constants.O_RDONLY);
    try {
      await dh.sync();
    } finally {
      await dh.close();
    }
    return policy;
  } finally {
    await release();
  }
}

/** An exclusive lock file; one older than 30 s is a crashed editor's and is taken over. */
async function lock(path: string): Promise<() => Promise<void>> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      const fh = await open(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
      await fh.writeFile(String(process.pid));
      await fh.close();
      return () => rm(path, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const age = await stat(path).then(
        (st) => Date.now() - st.mtimeMs,
        () => 0,
      );
      if (age > 30_000) await rm(path, { force: true });
      else if (Date.now() > deadline)
        throw new CorralError(ErrorCodes.INPUT_VALIDATION, `The policy is locked by another corral command (${path}); try again.`, {
          lock: path,
        });
      else await new Promise((r) => setTimeout(r, 50));
    }
  }
}

/**
 * The real path of a file that may not exist yet: realpath of its nearest
 * existing folder, plus the rest. A file that is a link leading nowhere yet
 * is followed, as the kernel's open(O_CREAT) would: the file is made where
 * the link points, and the link stays.
 */
export async function plannedRealpath(path: string): Promise<string> {
  const rest: string[] = [];
  let current = absoluteAsGiven(path);
  for (let hops = 0; ; ) {
    try {
      return join(await realpath(current), ...rest.reverse());
    } catch {
      const target = rest.length === 0 && hops < 40 ? await readlink(current).catch(() => undefined) : undefined;
      if (target !== undefined) {
        hops++;
        current = isAbsolute(target) ? target : `${dirname(current)}${sep}${target}`;
        continue;
      }
      const parent = dirname(current);
      if (parent === current) return absoluteAsGiven(path);
      rest.push(basename(current));
      current = parent;
    }
  }
}
