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
        // As the signal's own listeners were: one that throws does not keep the others from being told
        // (its error is thrown afterwards, and the signal reports it as it reports a listener's), and
        // one removed meanwhile (by a waiter told before it) is not called.
        const errors: unknown[] = [];
        for (const l of [...set]) {
          if (!set.delete(l)) continue;
          try {
            l();
          } catch (err) {
            errors.push(err);
          }
        }
        if (errors.length === 1) throw errors[0];
        if (errors.length > 1) throw new AggregateError(errors, 'Listeners of an abort threw');
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
