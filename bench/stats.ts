/** Small, dependency-free statistics for benchmark samples (milliseconds). */
export function quantile(samples: number[], q: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const at = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[at]!;
}

export const median = (samples: number[]) => quantile(samples, 0.5);

/** Time `fn` `runs` times after `warmup` untimed runs; returns per-run milliseconds. */
export async function sample(runs: number, fn: () => Promise<unknown> | unknown, warmup = Math.min(5, runs)): Promise<number[]> {
  for (let i = 0; i < warmup; i++) await fn();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await fn();
    times.push(performance.now() - t);
  }
  return times;
}

export function fmt(ms: number): string {
  if (!Number.isFinite(ms)) return 'n/a';
  return ms >= 100 ? `${ms.toFixed(0)} ms` : ms >= 10 ? `${ms.toFixed(1)} ms` : `${ms.toFixed(2)} ms`;
}

/** A markdown table from rows of cells. */
export function table(header: string[], rows: string[][]): string {
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}
