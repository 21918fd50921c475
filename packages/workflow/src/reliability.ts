/**
 * What Corral believes about each tool version's reliability: a Beta(α, β)
 * belief that a call succeeds, updated by every outcome, and a running mean
 * of its duration. The router picks among a step's alternative tools by
 * expected utility (success probability − cost_weight × normalized mean
 * duration), or by Thompson sampling. Pure arithmetic: no host needed.
 */
import { parseToolRef } from '@corral/core';

// ---------------------------------------------------------------- numerics

/** ln Γ(x) for x > 0 (Lanczos, g = 7, n = 9: ~15 significant digits). */
export function logGamma(x: number): number {
  const c = [
    0.9999999999998099, 676.5203681218851, -1259.1392167224028, 771.3234287776531, -176.6150291621406, 12.507343278686905,
    -0.13857109526572012, 9.984369578019572e-6, 1.5056327351493116e-7,
  ];
  if (x < 0.5) return Math.log(Math.PI / Math.abs(Math.sin(Math.PI * x))) - logGamma(1 - x); // reflection
  const z = x - 1;
  let sum = c[0]!;
  for (let i = 1; i < 9; i++) sum += c[i]! / (z + i);
  const t = z + 7.5;
  return 0.5 * Math.log(2 * Math.PI) + (z + 0.5) * Math.log(t) - t + Math.log(sum);
}

/** The continued fraction of the incomplete beta function, by the modified Lentz method. */
function betaContinuedFraction(a: number, b: number, x: number): number {
  const TINY = 1e-300;
  const qab = a + b;
  const qap = a + 1;
  const qam = a - 1;
  let c = 1;
  let d = 1 - (qab * x) / qap;
  if (Math.abs(d) < TINY) d = TINY;
  d = 1 / d;
  let h = d;
  for (let m = 1; m <= 1000; m++) {
    const m2 = 2 * m;
    let aa = (m * (b - m) * x) / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    if (Math.abs(d) < TINY) d = TINY;
    c = 1 + aa / c;
    if (Math.abs(c) < TINY) c = TINY;
    d = 1 / d;
    h *= d * c;
    aa = (-(a + m) * (qab + m) * x) / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    if (Math.abs(d) < TINY) d = TINY;
    c = 1 + aa / c;
    if (Math.abs(c) < TINY) c = TINY;
    d = 1 / d;
    const step = d * c;
    h *= step;
    if (Math.abs(step - 1) < 1e-15) break;
  }
  return h;
}

/** The regularized incomplete beta function I_x(a, b): the CDF of Beta(a, b) at x. */
export function incompleteBeta(x: number, a: number, b: number): number {
  if (!(a > 0 && b > 0)) throw new RangeError('a and b must be positive');
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const front = Math.exp(logGamma(a + b) - logGamma(a) - logGamma(b) + a * Math.log(x) + b * Math.log1p(-x));
  // The fraction converges fast on this side of the mean; use the symmetry I_x(a,b) = 1 − I_{1−x}(b,a) on the other.
  if (x < (a + 1) / (a + b + 2)) return (front * betaContinuedFraction(a, b, x)) / a;
  return 1 - (front * betaContinuedFraction(b, a, 1 - x)) / b;
}

/** The p-quantile of Beta(a, b), by bisection on the CDF (to 1e-12). */
export function betaQuantile(p: number, a: number, b: number): number {
  if (!(p >= 0 && p <= 1)) throw new RangeError('p must be within [0, 1]');
  if (p === 0) return 0;
  if (p === 1) return 1;
  let lo = 0;
  let hi = 1;
  for (let i = 0; i < 200 && hi - lo > 1e-12; i++) {
    const mid = (lo + hi) / 2;
    if (incompleteBeta(mid, a, b) < p) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

/** A small, fast, seedable generator (mulberry32): same seed, same sequence, for reproducible routing in tests. */
export function seededRandom(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function normal(random: () => number): number {
  // Box–Muller; 1 − u keeps log away from 0.
  const u = 1 - random();
  const v = random();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
}

/** Gamma(shape, 1) by Marsaglia and Tsang's method. */
function gamma(shape: number, random: () => number): number {
  if (shape < 1) return gamma(shape + 1, random) * (1 - random()) ** (1 / shape);
  const d = shape - 1 / 3;
  const c = 1 / Math.sqrt(9 * d);
  for (;;) {
    let x: number;
    let v: number;
    do {
      x = normal(random);
      v = 1 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const u = 1 - random();
    if (Math.log(u) < 0.5 * x * x + d - d * v + d * Math.log(v)) return d * v;
  }
}

/** One draw from Beta(a, b). */
export function sampleBeta(a: number, b: number, random: () => number): number {
  const x = gamma(a, random);
  return x / (x + gamma(b, random));
}

// ---------------------------------------------------------------- beliefs

/** One call's outcome, as the engine reports it or a host replays it from past executions. */
export interface ToolOutcome {
  /** The tool's name (a `name@range` reference is reduced to its name). */
  tool: string;
  /** The version that ran; null or absent when the call failed before one was chosen. */
  version?: string | null;
  ok: boolean;
  durationMs?: number;
}

export interface ToolBelief {
  /** `name@version`, or `name` for outcomes without a version. */
  key: string;
  alpha: number;
  beta: number;
  successes: number;
  failures: number;
  /** The posterior mean α / (α + β). */
  mean: number;
  /** Mean duration of the calls seen, null before any. */
  meanDurationMs: number | null;
  /** The equal-tailed credible interval at the level asked for (0.95 unless said). */
  interval: [number, number];
}

export interface RouteChoice {
  strategy?: 'utility' | 'thompson';
  /** Weight of the normalized mean duration against the success probability. Default 0. */
  costWeight?: number;
}

export interface ReliabilityOptions {
  /** The prior Beta(α, β) of a tool never seen. Default Beta(1, 1), uniform. */
  prior?: { alpha: number; beta: number };
  /** Uniform [0, 1) numbers for Thompson sampling. Default Math.random; seededRandom(n) for reproducible runs. */
  random?: () => number;
  /**
   * `utility` tries every alternative this many times before it trusts the
   * means (default 10): a greedy choice never learns about a tool it does
   * not try. Thompson sampling explores by itself and ignores this.
   */
  minTrials?: number;
  /**
   * Retirement: a tool whose mean success is below `threshold` after at
   * least `minEvidence` outcomes is not chosen while another candidate is
   * not retired. Default { threshold: 0.5, minEvidence: 20 }.
   */
  retire?: { threshold: number; minEvidence: number };
}

interface Counts {
  successes: number;
  failures: number;
  durationTotal: number;
  durations: number;
}

export class Reliability {
  readonly prior: { alpha: number; beta: number };
  readonly #random: () => number;
  readonly #minTrials: number;
  readonly #retire: { threshold: number; minEvidence: number };
  readonly #counts = new Map<string, Counts>();
  /** name → the key of the version seen last: what a bare or ranged reference means. */
  readonly #latest = new Map<string, string>();

  constructor(options: ReliabilityOptions = {}) {
    this.prior = options.prior ?? { alpha: 1, beta: 1 };
    if (!(this.prior.alpha > 0 && this.prior.beta > 0)) throw new RangeError('the prior needs alpha > 0 and beta > 0');
    this.#random = options.random ?? Math.random;
    this.#minTrials = options.minTrials ?? 10;
    this.#retire = options.retire ?? { threshold: 0.5, minEvidence: 20 };
  }

  observe(outcome: ToolOutcome): void {
    const name = parseToolRef(outcome.tool).name;
    const key = outcome.version ? `${name}@${outcome.version}` : name;
    let counts = this.#counts.get(key);
    if (!counts) this.#counts.set(key, (counts = { successes: 0, failures: 0, durationTotal: 0, durations: 0 }));
    if (outcome.ok) counts.successes++;
    else counts.failures++;
    if (typeof outcome.durationMs === 'number' && Number.isFinite(outcome.durationMs) && outcome.durationMs >= 0) {
      counts.durationTotal += outcome.durationMs;
      counts.durations++;
    }
    if (outcome.version || !this.#latest.has(name)) this.#latest.set(name, key);
  }

  /** Start from past outcomes (a host reads them from its store's executions), oldest first. */
  seed(outcomes: Iterable<ToolOutcome>): void {
    for (const outcome of outcomes) this.observe(outcome);
  }

  /**
   * The belief about a tool: `name@1.2.3` exactly, or for a bare name (or
   * `name@range`) the version of that name seen last; the prior when none was.
   */
  belief(ref: string, level = 0.95): ToolBelief {
    const key = this.#key(ref);
    const c = this.#counts.get(key) ?? { successes: 0, failures: 0, durationTotal: 0, durations: 0 };
    const alpha = this.prior.alpha + c.successes;
    const beta = this.prior.beta + c.failures;
    const tail = (1 - level) / 2;
    return {
      key,
      alpha,
      beta,
      successes: c.successes,
      failures: c.failures,
      mean: alpha / (alpha + beta),
      meanDurationMs: c.durations > 0 ? c.durationTotal / c.durations : null,
      interval: [betaQuantile(tail, alpha, beta), betaQuantile(1 - tail, alpha, beta)],
    };
  }

  /** Every tool version seen, by key. */
  beliefs(level = 0.95): ToolBelief[] {
    return [...this.#counts.keys()].sort().map((key) => this.belief(key, level));
  }

  /** A tool to retire: at least `minEvidence` outcomes seen, and a mean success below `threshold`. */
  retired(ref: string, threshold: number, minEvidence: number): boolean {
    const b = this.belief(ref);
    return b.successes + b.failures >= minEvidence && b.mean < threshold;
  }

  /** Pick one of `candidates` (tool references as a step lists them). Ties go to the one listed first. */
  choose(all: readonly string[], options: RouteChoice = {}): string {
    if (all.length === 0) throw new RangeError('no candidates to choose from');
    const working = all.filter((c) => !this.retired(c, this.#retire.threshold, this.#retire.minEvidence));
    const candidates = working.length > 0 ? working : all;
    if (candidates.length === 1) return candidates[0]!;
    const weight = options.costWeight ?? 0;
    const beliefs = candidates.map((c) => this.belief(c, 0.95));
    // Durations normalized by the slowest candidate's, so cost_weight is on the same 0..1 scale as a probability.
    const slowest = Math.max(0, ...beliefs.map((b) => b.meanDurationMs ?? 0));
    const cost = (b: ToolBelief): number => (slowest > 0 && b.meanDurationMs !== null ? b.meanDurationMs / slowest : 0);
    let scores: number[];
    if (options.strategy === 'thompson') {
      scores = beliefs.map((b) => sampleBeta(b.alpha, b.beta, this.#random) - weight * cost(b));
    } else {
      const seen = beliefs.map((b) => b.successes + b.failures);
      const least = Math.min(...seen);
      if (least < this.#minTrials) return candidates[seen.indexOf(least)]!;
      scores = beliefs.map((b) => b.mean - weight * cost(b));
    }
    let best = 0;
    for (let i = 1; i < scores.length; i++) if (scores[i]! > scores[best]!) best = i;
    return candidates[best]!;
  }

  #key(ref: string): string {
    if (this.#counts.has(ref)) return ref;
    const { name, range } = parseToolRef(ref);
    // An exact version is that version, seen or not; a range or a bare name is the version that ran last.
    if (range && /^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/.test(range)) return `${name}@${range}`;
    return this.#latest.get(name) ?? name;
  }
}
