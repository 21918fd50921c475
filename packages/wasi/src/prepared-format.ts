/**
 * Names the version of glue.ts's rewrites that prepared glue carries: the
 * first 12 hex digits of that file's SHA-256 (glue-rewrites.test.ts checks
 * it, so a change to the rewrites cannot keep the old name).
 */
export const GLUE_REWRITES = '32febdf79c54';

/**
 * Names the transpiler and glue format, so caches drop entries made by
 * another jco or another layout. Must match the pinned @bytecodealliance/jco.
 * v2: `imports` holds the declared imports (from the binary), not jco's list
 * of used ones. v3: the glue is rewritten (glue.ts), by the rewrites
 * GLUE_REWRITES names. A module of its own: hosts read it without loading
 * the transpiler or the rewrites.
 */
export const PREPARED_FORMAT = `jco-1.15.4/v3/${GLUE_REWRITES}`;

/** How a glue Corral rewrote begins (glue.ts): this, then the GLUE_REWRITES that did it. */
export const REWRITTEN_MARK = '// rewritten by corral ';

/**
 * Whether a glue was rewritten by other rewrites than these: a stale entry
 * of a cache not keyed by PREPARED_FORMAT, which a host prepares again
 * (glue.ts refuses to run it).
 */
export function rewrittenByOtherVersion(glue: string): boolean {
  return glue.startsWith(REWRITTEN_MARK) && !glue.startsWith(`${REWRITTEN_MARK}${GLUE_REWRITES}\n`);
}

/**
 * Whether a prepared component from a cache can be used: the shape of a
 * PreparedComponent (a cache of one's own may hand back anything), and glue
 * not rewritten by another version. Anything else is prepared again.
 */
export function usablePrepared(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const { glue, modules, imports } = value as Record<string, unknown>;
  return (
    typeof glue === 'string' &&
    !rewrittenByOtherVersion(glue) &&
    typeof modules === 'object' &&
    modules !== null &&
    Object.values(modules).every((bytes) => bytes instanceof Uint8Array) &&
    Array.isArray(imports) &&
    imports.every((name) => typeof name === 'string')
  );
}
