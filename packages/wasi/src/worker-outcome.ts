/**
 * What a sandbox worker answers, and how it turns a failure into that answer.
 * Its own module because the host side (executor.ts) needs it too, without
 * the runners worker-api.ts brings in: the main thread never runs a tool.
 */
import { CorralError, ErrorCodes, type CorralErrorJSON } from '@corral/core/errors';

/** What a sandbox worker answers: a value, or the error as data (errors lose their class crossing a worker boundary). */
export type Outcome<T> = { ok: true; value: T } | { ok: false; error: CorralErrorJSON };

/** Run `work` inside a worker, turning any failure into an Outcome. */
export async function outcomeOf<T>(work: () => Promise<T>): Promise<Outcome<T>> {
  try {
    return { ok: true, value: await work() };
  } catch (err) {
    if (err instanceof CorralError) return { ok: false, error: err.toJSON() };
    // What a caller or a tool can cause is a CorralError by now; anything else is Corral's own bug.
    const cause = err instanceof Error ? err.message : String(err);
    const error = new CorralError(
      ErrorCodes.UNEXPECTED_EXIT,
      `The sandbox worker failed: ${cause} (an internal error, not the tool's; please report it)`,
      { reason: 'internal', cause },
    );
    return { ok: false, error: error.toJSON() };
  }
}
