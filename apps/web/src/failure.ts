/**
 * What kind of failure a diff-summary call ended in, from its error code and
 * message (both kept in the execution snapshot, so history entries are
 * labelled the same way as the live result). The page gives each kind its
 * own title, advice and history label (i18n.ts).
 */
export type FailureKind = 'not-diff' | 'output' | 'memory' | 'time' | 'too-large' | 'tool' | 'other';

export const FAILURE_KINDS: readonly FailureKind[] = ['not-diff', 'output', 'memory', 'time', 'too-large', 'tool', 'other'];

export function failureKind(code: string | null | undefined, message: string | null | undefined): FailureKind {
  const m = message ?? '';
  if (code === 'E_RESOURCE_EXHAUSTED') {
    if (/output/i.test(m)) return 'output';
    if (/memory/i.test(m)) return 'memory';
    if (/did not finish|within \d+ ?ms|time/i.test(m)) return 'time';
    return 'other';
  }
  // The input_schema's maxLength: a diff over 64 Mi characters.
  if (code === 'E_INPUT_VALIDATION') return 'too-large';
  if (code === 'E_UNEXPECTED_EXIT') return /not a unified diff/.test(m) ? 'not-diff' : 'tool';
  return 'other';
}
