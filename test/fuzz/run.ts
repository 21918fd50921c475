/**
 * `npm run fuzz [-- --seed=N --runs=M --path=P --pace=P --lenient-links]`: the
 * filesystem fuzz (fs-fuzz.ts) at length. Prints the seed first, progress as
 * it goes, and a summary; on a counterexample, the shrunk sequence and the
 * command that replays it, and exits 1. A run is resumed, or a failure
 * replayed, by its seed (and fast-check's path). --verbose adds each
 * operation's outcomes; FUZZ_TRACE=1 prints every operation as it runs.
 * A sequence that leaves a symlink the guest made (or moved) leading out of
 * the mount when the host follows it fails too, unless --lenient-links. --pace
 * sets how the host actor moves folders (calm, frantic, or mixed: both in
 * turn, the default).
 */
import type { Pace } from './fs-fuzz.js';
import { formatReport, fuzzFilesystem } from './fs-fuzz.js';

function option(name: string): string | undefined {
  const prefix = `--${name}=`;
  return process.argv
    .slice(2)
    .find((a) => a.startsWith(prefix))
    ?.slice(prefix.length);
}

const known = ['--seed=', '--runs=', '--path=', '--lenient-links', '--pace=', '--every=', '--verbose'];
for (const arg of process.argv.slice(2)) {
  if (!known.some((k) => arg === k || (k.endsWith('=') && arg.startsWith(k)))) {
    console.error(
      `unknown argument ${arg}; use --seed=N --runs=M [--path=P] [--lenient-links] [--pace=calm|frantic|mixed] [--every=K] [--verbose]`,
    );
    process.exit(2);
  }
}

const seed = option('seed') !== undefined ? Number(option('seed')) : (Date.now() ^ (Math.random() * 0x7fffffff)) | 0;
const runs = Number(option('runs') ?? 10_000);
const every = Number(option('every') ?? 500);
const path = option('path');
const pace = (option('pace') ?? 'mixed') as Pace;
if (!['calm', 'frantic', 'mixed'].includes(pace)) {
  console.error('--pace is calm, frantic or mixed');
  process.exit(2);
}
if (!Number.isInteger(seed) || !Number.isInteger(runs) || runs < 1) {
  console.error('--seed and --runs take integers');
  process.exit(2);
}

console.log(`corral filesystem fuzz: seed ${seed}, ${runs} sequences, host actor ${pace}${path ? `, replaying path ${path}` : ''}`);
console.log(`(resume or replay with: npm run fuzz -- --seed=${seed} --runs=${runs}${pace !== 'mixed' ? ` --pace=${pace}` : ''})`);
const started = performance.now();
const report = await fuzzFilesystem({
  runs,
  seed,
  ...(path ? { path } : {}),
  strictLinks: process.argv.includes('--lenient-links'),
  pace,
  progressEvery: every,
  onProgress: (stats, actor) => {
    const s = ((performance.now() - started) / 1000).toFixed(0);
    console.log(
      `  ${String(stats.sequences).padStart(6)} sequences  ${String(stats.guestOps).padStart(8)} guest ops  ${String(actor.ops).padStart(9)} host-actor ops  ${s} s`,
    );
  },
});
console.log('');
console.log(formatReport(report, process.argv.includes('--verbose')));
process.exit(report.failed ? 1 : 0);
