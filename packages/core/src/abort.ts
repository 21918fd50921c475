/**
 * One 'abort' listener per signal, however many calls wait on it. A signal
 * an agent shares between its calls (one per session, or per batch) got a
 * listener from each call: Node warned of a leak past 10, and a listener
 * left behind kept its call's job alive for as long as the signal lived.
 */
const waiting = new WeakMap<AbortSignal, Set<() => void>>();

/** Call `listener` once when `signal` aborts (at once if it has); returns what removes it. */
export function onAbort(signal: AbortSignal, listener: () => void): () => void {
  if (signal.aborted) {
    listener();
    return () => {};
  }
  const known = waiting.get(signal);
  const listeners = known ?? new Set<() => void>();
  if (!known) {
    const set = listeners;
    waiting.set(signal, set);
    signal.addEventListener(
      'abort',
      () => {
        waiting.delete(signal);
        for (const l of [...set]) l();
        set.clear();
      },
      { once: true },
    );
  }
  const entry = () => listener();
  listeners.add(entry);
  return () => {
    listeners.delete(entry);
  };
}
