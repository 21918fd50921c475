/**
 * One 'abort' listener per signal, however many calls wait on it. A signal
 * an agent shares between its calls (one per session, or per batch) got a
 * listener from each call: Node warned of a leak past 10, and a listener
 * left behind kept its call's job alive for as long as the signal lived.
 */
interface Waiting {
  readonly waiters: Set<() => void>;
  readonly dispatch: () => void;
}

const waiting = new WeakMap<AbortSignal, Waiting>();

/** Call `listener` once when `signal` aborts (at once if it has); returns what removes it. */
export function onAbort(signal: AbortSignal, listener: () => void): () => void {
  if (signal.aborted) {
    listener();
    return () => {};
  }
  let known = waiting.get(signal);
  if (!known) {
    const waiters = new Set<() => void>();
    // As the signal's own listeners were: one that throws does not keep the others from being told
    // (its error is thrown afterwards, and the signal reports it as it reports a listener's), and one
    // removed meanwhile (by a waiter told before it) is not called.
    const dispatch = () => {
      waiting.delete(signal);
      const errors: unknown[] = [];
      for (const w of [...waiters]) {
        if (!waiters.delete(w)) continue;
        try {
          w();
        } catch (err) {
          errors.push(err);
        }
      }
      if (errors.length === 1) throw errors[0];
      if (errors.length > 1) throw new AggregateError(errors, 'Listeners of an abort threw');
    };
    known = { waiters, dispatch };
    waiting.set(signal, known);
    signal.addEventListener('abort', dispatch, { once: true });
  }
  const { waiters, dispatch } = known;
  const entry = () => listener();
  waiters.add(entry);
  return () => {
    // The last waiter gone, so is the signal's listener: Node keeps a timeout or AbortSignal.any()
    // signal that has one alive until it aborts, which for a session's any() may be never.
    if (waiters.delete(entry) && waiters.size === 0 && waiting.get(signal) === known) {
      waiting.delete(signal);
      signal.removeEventListener('abort', dispatch);
    }
  };
}
