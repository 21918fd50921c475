/**
 * Deterministic unified diffs of a chosen size, shaped like `git diff` output
 * (several files, several hunks each), for benchmarks.
 */
export function syntheticDiff(targetBytes: number): string {
  const parts: string[] = [];
  let size = 0;
  for (let file = 0; size < targetBytes; file++) {
    const path = `src/module${file}/file${file}.ts`;
    const header = `diff --git a/${path} b/${path}\nindex 83db48f..bf269f4 100644\n--- a/${path}\n+++ b/${path}\n`;
    parts.push(header);
    size += header.length;
    for (let hunk = 0; hunk < 8 && size < targetBytes; hunk++) {
      const lines: string[] = [];
      for (let i = 0; i < 3; i++) lines.push(` const context${hunk}_${i} = compute(${i}, "${path}");`);
      for (let i = 0; i < 4; i++) lines.push(`-const removed${hunk}_${i} = legacy(${i * file});`);
      for (let i = 0; i < 6; i++) lines.push(`+const added${hunk}_${i} = modern(${i * file}, { hunk: ${hunk} });`);
      for (let i = 0; i < 3; i++) lines.push(` return context${hunk}_${i};`);
      const start = hunk * 40 + 1;
      const text = `@@ -${start},10 +${start},12 @@ function f${hunk}() {\n${lines.join('\n')}\n`;
      parts.push(text);
      size += text.length;
    }
  }
  return parts.join('');
}
