/**
 * The filesystem fuzz, short: a few hundred random sequences of guest
 * operations against a read-write and a read-only host folder while a host
 * thread moves folders and swaps them for outward symlinks (fs-fuzz.ts).
 * `npm run fuzz` runs it at length. A failure prints the shrunk sequence and
 * the seed; CORRAL_FUZZ_SEED=N replays a run.
 */
import { expect, it } from 'vitest';
import { formatReport, fuzzFilesystem } from './fs-fuzz.js';

const RUNS = Number(process.env.CORRAL_FUZZ_RUNS ?? 300);

it(`keeps a guest inside its mounts through ${RUNS} sequences against a racing host`, async () => {
  const seed = process.env.CORRAL_FUZZ_SEED !== undefined ? Number(process.env.CORRAL_FUZZ_SEED) : Date.now() % 2 ** 31;
  const report = await fuzzFilesystem({ runs: RUNS, seed });
  if (report.failed) throw new Error(`${formatReport(report)}\n(replay: CORRAL_FUZZ_SEED=${report.seed})`);
  // The run did something: operations succeeded and failed, and the host moved folders meanwhile.
  expect(report.stats.outcomes.get('ok')).toBeGreaterThan(RUNS);
  expect(report.stats.outcomes.get('not-permitted')).toBeGreaterThan(0);
  expect(report.actor.swaps).toBeGreaterThan(0);
}, 60_000);
