/**
 * diff-summary's summary sentence, rebuilt from its files and totals: the
 * page rewrites a shown sentence in the other language, with its numbers
 * formatted like the rest of the page, without running the tool again. Its
 * own module, so the page's first chunk does not carry the JS parser
 * (js-diff.ts), which uses it too and holds it to the tool's words.
 */
import type { FileStatus, FileSummary, Language } from './summary.js';

const SUMMARY_ORDER: FileStatus[] = ['added', 'deleted', 'renamed', 'copied', 'modified', 'binary'];
const ZH: Record<FileStatus, string> = {
  added: '新增',
  deleted: '删除',
  modified: '修改',
  renamed: '重命名',
  copied: '复制',
  binary: '二进制',
};

/**
 * The tool's summary sentence for these files and totals, in `language`.
 * `num` writes the numbers: the tool writes them plain (1031); the page
 * passes its own formatter, so the sentence reads like the tiles (1,031),
 * and uses this to rewrite a shown sentence in the other language without
 * running the tool again.
 */
export function summarySentence(
  files: readonly FileSummary[],
  totals: { additions: number; deletions: number; hunks: number },
  language: Language,
  num: (n: number) => string = String,
): string {
  const byStatus = new Map<FileStatus, number>();
  let largest: FileSummary | null = null;
  for (const f of files) {
    byStatus.set(f.status, (byStatus.get(f.status) ?? 0) + 1);
    if (f.additions + f.deletions > 0 && (!largest || f.additions + f.deletions > largest.additions + largest.deletions)) largest = f;
  }
  const kinds = SUMMARY_ORDER.filter((s) => byStatus.has(s));
  const n = files.length;
  if (n === 0) return language === 'zh' ? '没有变更。' : 'No changes.';
  let summary: string;
  if (language === 'en') {
    summary =
      `${num(n)} file${n === 1 ? '' : 's'} changed: ` +
      kinds.map((s) => `${num(byStatus.get(s)!)} ${s}`).join(', ') +
      `; +${num(totals.additions)} −${num(totals.deletions)} in ${num(totals.hunks)} hunk${totals.hunks === 1 ? '' : 's'}.`;
    if (largest) summary += ` Largest change: ${largest.path} (+${num(largest.additions)} −${num(largest.deletions)}).`;
  } else {
    summary =
      `${num(n)} 个文件变更：` +
      kinds.map((s) => `${ZH[s]} ${num(byStatus.get(s)!)} 个`).join('，') +
      `；+${num(totals.additions)} −${num(totals.deletions)}，共 ${num(totals.hunks)} 个变更块。`;
    if (largest) summary += `改动最大的文件：${largest.path}（+${num(largest.additions)} −${num(largest.deletions)}）。`;
  }
  return summary;
}
