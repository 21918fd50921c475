/**
 * What `fn` threw, or undefined when it returned. wasi:filesystem calls
 * throw their error code as a string, stream calls a variant: tests compare
 * what comes back with `toBe('not-permitted')`, `toMatchObject(...)`.
 */
export function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  return undefined;
}
