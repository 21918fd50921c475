/**
 * Names the version of glue.ts's rewrites that prepared glue carries: the
 * first 12 hex digits of that file's SHA-256 (glue-rewrites.test.ts checks
 * it, so a change to the rewrites cannot keep the old name).
 */
export const GLUE_REWRITES = 'c2dd1e5520f1';

/**
 * Names the transpiler and glue format, so caches drop entries made by
 * another jco or another layout. Must match the pinned @bytecodealliance/jco.
 * v2: `imports` holds the declared imports (from the binary), not jco's list
 * of used ones. v3: the glue is rewritten (glue.ts), by the rewrites
 * GLUE_REWRITES names. A module of its own: hosts read it without loading
 * the transpiler or the rewrites.
 */
export const PREPARED_FORMAT = `jco-1.15.4/v3/${GLUE_REWRITES}`;
