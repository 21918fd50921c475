/**
 * Checks for values a guest hands the host.
 *
 * jco's glue lifts arguments by the types the *component* declares, not by
 * the WASI interfaces it claims to import: a hostile component can declare
 * `descriptor.write(buffer: string, offset: string)` and hand the host
 * strings where numbers belong. Every host function therefore checks each
 * argument before using it; a value of the wrong type or out of range traps
 * the guest (GuestTypeError), it never reaches quota or allocation
 * arithmetic.
 */

/** A value of the wrong type or range from the guest: the call traps. */
export class GuestTypeError extends TypeError {}

const U64_MAX = (1n << 64n) - 1n;

function bad(what: string, expected: string, value: unknown): never {
  const shown = typeof value === 'bigint' ? `${value}n` : typeof value === 'string' ? 'a string' : typeof value;
  throw new GuestTypeError(`${what}: expected ${expected}, got ${shown}`);
}

/** A WIT `u64`. */
export function u64(value: unknown, what: string): bigint {
  if (typeof value !== 'bigint' || value < 0n || value > U64_MAX) bad(what, 'a u64', value);
  return value;
}

/** A WIT `u64` the host uses as a JS number (offsets, lengths): a safe integer. */
export function u64Number(value: unknown, what: string): number {
  const n = u64(value, what);
  // Past 2^53 a number stops counting bytes exactly; no file or buffer is that big.
  return n > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(n);
}

/** A WIT `u32` (or smaller unsigned integer). */
export function u32(value: unknown, what: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > 0xffffffff) bad(what, 'a u32', value);
  return value;
}

export function bool(value: unknown, what: string): boolean {
  if (typeof value !== 'boolean') bad(what, 'a bool', value);
  return value;
}

export function string(value: unknown, what: string): string {
  if (typeof value !== 'string') bad(what, 'a string', value);
  return value;
}

/** A WIT `list<u8>`. */
export function bytes(value: unknown, what: string): Uint8Array {
  if (!(value instanceof Uint8Array)) bad(what, 'a list<u8>', value);
  return value;
}

/** A WIT record or flags value: an object whose listed fields are booleans (missing ones read as false). */
export function flags<K extends string>(value: unknown, what: string, names: readonly K[]): Record<K, boolean> {
  if (typeof value !== 'object' || value === null) bad(what, 'flags', value);
  const out = {} as Record<K, boolean>;
  for (const name of names) {
    const field = (value as Record<string, unknown>)[name];
    // The field's name is spelled out only for the error: flags are checked on every call.
    if (field !== undefined && typeof field !== 'boolean') bad(`${what}.${name}`, 'a bool', field);
    out[name] = field === true;
  }
  return out;
}

/** An enum case, one of `cases`. */
export function oneOf<T extends string>(value: unknown, what: string, cases: readonly T[]): T {
  if (typeof value !== 'string' || !(cases as readonly string[]).includes(value)) bad(what, `one of ${cases.join(', ')}`, value);
  return value as T;
}

/** A resource handle of this host's class `type`. */
export function resource<T>(value: unknown, what: string, type: abstract new (...args: never[]) => T): T {
  if (!(value instanceof type)) bad(what, `a ${type.name}`, value);
  return value;
}

/** A WIT `datetime`. */
export function datetime(value: unknown, what: string): { seconds: bigint; nanoseconds: number } {
  if (typeof value !== 'object' || value === null) bad(what, 'a datetime', value);
  const { seconds, nanoseconds } = value as { seconds?: unknown; nanoseconds?: unknown };
  u64(seconds, `${what}.seconds`);
  if (u32(nanoseconds, `${what}.nanoseconds`) > 999_999_999) bad(`${what}.nanoseconds`, 'under 1e9', nanoseconds);
  return { seconds: seconds as bigint, nanoseconds: nanoseconds as number };
}

/** A wasi:filesystem `new-timestamp`, as nanoseconds since the epoch, 'now', or null for no change. */
export function newTimestamp(value: unknown, what: string): bigint | 'now' | null {
  if (typeof value !== 'object' || value === null) bad(what, 'a new-timestamp', value);
  const { tag, val } = value as { tag?: unknown; val?: unknown };
  if (tag === 'no-change') return null;
  if (tag === 'now') return 'now';
  if (tag === 'timestamp') {
    const t = datetime(val, what);
    return t.seconds * 1_000_000_000n + BigInt(t.nanoseconds);
  }
  return bad(what, 'a new-timestamp', value);
}

/** An array of at most `max` elements (guests choose list lengths). */
export function list(value: unknown, what: string, max: number): unknown[] {
  if (!Array.isArray(value)) bad(what, 'a list', value);
  if (value.length > max) bad(what, `at most ${max} elements`, value.length);
  return value;
}
