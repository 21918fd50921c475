/**
 * Beliefs and routing: the Beta numerics against closed forms, intervals
 * that shrink with evidence, and a router that learns the better of two
 * tools, or the cheaper of two equally good ones, through whole workflow runs.
 */
import { ErrorCodes } from '@corral/core';
import {
  betaQuantile,
  incompleteBeta,
  loadWorkflow,
  logGamma,
  Reliability,
  runWorkflow,
  sampleBeta,
  seededRandom,
  type RouteChoice,
} from '@corral/workflow';
import { describe, expect, it } from 'vitest';
import { failure, host, MemoryJournal, ok, Tools } from './helpers.js';

/** P(X ≥ a) for X ~ Binomial(n, x): equal to I_x(a, n − a + 1) for whole a, b. */
function binomialTail(a: number, b: number, x: number): number {
  const n = a + b - 1;
  let sum = 0;
  let choose = 1; // C(n, 0)
  for (let j = 0; j <= n; j++) {
    if (j >= a) sum += choose * x ** j * (1 - x) ** (n - j);
    choose = (choose * (n - j)) / (j + 1);
  }
  return sum;
}

describe('the Beta numerics', () => {
  it('ln Γ matches factorials and Γ(1/2) = √π', () => {
    expect(logGamma(5)).toBeCloseTo(Math.log(24), 12);
    expect(logGamma(11)).toBeCloseTo(Math.log(3628800), 11);
    expect(logGamma(0.5)).toBeCloseTo(Math.log(Math.sqrt(Math.PI)), 12);
    expect(logGamma(0.1)).toBeCloseTo(2.252712651734206, 12);
  });

  it('the regularized incomplete beta matches closed forms', () => {
    for (const x of [0.01, 0.2, 0.4, 0.5, 0.77, 0.99]) {
      expect(incompleteBeta(x, 3.5, 1)).toBeCloseTo(x ** 3.5, 12);
      expect(incompleteBeta(x, 1, 2.5)).toBeCloseTo(1 - (1 - x) ** 2.5, 12);
      // Beta(½, ½) is the arcsine distribution.
      expect(incompleteBeta(x, 0.5, 0.5)).toBeCloseTo((2 / Math.PI) * Math.asin(Math.sqrt(x)), 10);
      for (const [a, b] of [
        [2, 3],
        [10, 4],
        [30, 70],
        [150, 60],
      ] as const) {
        expect(incompleteBeta(x, a, b)).toBeCloseTo(binomialTail(a, b, x), 10);
      }
    }
    expect(incompleteBeta(0.4, 2, 3)).toBeCloseTo(0.5248, 12);
    expect(incompleteBeta(0.5, 7.25, 7.25)).toBeCloseTo(0.5, 12);
    expect(incompleteBeta(0, 2, 2)).toBe(0);
    expect(incompleteBeta(1, 2, 2)).toBe(1);
  });

  it('the quantile inverts it', () => {
    expect(betaQuantile(0.5248, 2, 3)).toBeCloseTo(0.4, 10);
    expect(betaQuantile(0.5, 1, 1)).toBeCloseTo(0.5, 10);
    expect(betaQuantile(0.3, 4, 1)).toBeCloseTo(0.3 ** (1 / 4), 10);
    for (const p of [0.025, 0.25, 0.5, 0.9, 0.975]) {
      expect(betaQuantile(p, 0.5, 0.5)).toBeCloseTo(Math.sin((Math.PI * p) / 2) ** 2, 10);
      for (const [a, b] of [
        [1.5, 8],
        [91, 11],
        [600, 400],
      ] as const) {
        expect(incompleteBeta(betaQuantile(p, a, b), a, b)).toBeCloseTo(p, 10);
      }
    }
    // Beta(2, 5), whose CDF is 1 − (1−x)⁶ − 6x(1−x)⁵: its 2.5 % and 97.5 % points, solved from that polynomial.
    expect(betaQuantile(0.025, 2, 5)).toBeCloseTo(0.0432718682927, 10);
    expect(betaQuantile(0.975, 2, 5)).toBeCloseTo(0.641234578998, 10);
  });

  it('samples with the right mean and variance, reproducibly', () => {
    const random = seededRandom(7);
    const xs = Array.from({ length: 20_000 }, () => sampleBeta(2, 5, random));
    const mean = xs.reduce((s, x) => s + x, 0) / xs.length;
    const variance = xs.reduce((s, x) => s + (x - mean) ** 2, 0) / xs.length;
    expect(mean).toBeCloseTo(2 / 7, 2);
    expect(variance).toBeCloseTo((2 * 5) / (7 * 7 * 8), 3);
    expect(sampleBeta(0.3, 0.4, seededRandom(1))).toBe(sampleBeta(0.3, 0.4, seededRandom(1)));
    expect(xs.every((x) => x > 0 && x < 1)).toBe(true);
  });
});

describe('beliefs', () => {
  it('start at the prior and count outcomes per tool version', () => {
    const r = new Reliability();
    expect(r.belief('lint')).toMatchObject({ key: 'lint', alpha: 1, beta: 1, mean: 0.5, meanDurationMs: null });
    r.observe({ tool: 'lint', version: '1.0.0', ok: true, durationMs: 10 });
    r.observe({ tool: 'lint@^1', version: '1.0.0', ok: false, durationMs: 30 });
    r.observe({ tool: 'lint', version: '2.0.0', ok: true, durationMs: 5 });
    expect(r.belief('lint@1.0.0')).toMatchObject({ key: 'lint@1.0.0', alpha: 2, beta: 2, successes: 1, failures: 1, meanDurationMs: 20 });
    expect(r.belief('lint')).toMatchObject({ key: 'lint@2.0.0', alpha: 2, beta: 1 }); // a bare name: the version seen last
    expect(r.belief('lint@3.0.0')).toMatchObject({ key: 'lint@3.0.0', alpha: 1, beta: 1 }); // an exact version never seen: the prior
    expect(r.beliefs().map((b) => b.key)).toEqual(['lint@1.0.0', 'lint@2.0.0']);
    const strict = new Reliability({ prior: { alpha: 2, beta: 8 } });
    expect(strict.belief('x').mean).toBeCloseTo(0.2, 12);
  });

  it('give credible intervals that hold the mean and shrink as evidence grows', () => {
    const r = new Reliability();
    const widths: number[] = [];
    let seen = 0;
    for (const n of [10, 100, 1000]) {
      for (; seen < n; seen++) r.observe({ tool: 't', version: '1.0.0', ok: seen % 10 !== 0 });
      const b = r.belief('t');
      expect(b.interval[0]).toBeLessThan(b.mean);
      expect(b.interval[1]).toBeGreaterThan(b.mean);
      widths.push(b.interval[1] - b.interval[0]);
    }
    expect(widths[1]).toBeLessThan(widths[0]! / 2);
    expect(widths[2]).toBeLessThan(widths[1]! / 2);
    expect(r.belief('t').interval[0]).toBeGreaterThan(0.87);
    expect(r.belief('t').interval[1]).toBeLessThan(0.93);
    const narrow = r.belief('t', 0.5);
    expect(narrow.interval[1] - narrow.interval[0]).toBeLessThan(widths[2]!);
  });

  it('mark a tool for retirement only with enough evidence of a low mean', () => {
    const r = new Reliability();
    r.seed(Array.from({ length: 4 }, () => ({ tool: 'bad', version: '1.0.0', ok: false })));
    expect(r.retired('bad', 0.5, 10)).toBe(false);
    r.seed(Array.from({ length: 8 }, (_, i) => ({ tool: 'bad', version: '1.0.0', ok: i === 0 })));
    expect(r.retired('bad', 0.5, 10)).toBe(true);
    expect(r.retired('bad', 0.05, 10)).toBe(false);
  });
});

/** A router choosing `rounds` times between tools with these success rates and durations; the choices made. */
function simulate(
  rates: Record<string, number>,
  durations: Record<string, number>,
  rounds: number,
  seed: number,
  choice: RouteChoice,
): string[] {
  const world = seededRandom(seed * 7919 + 1);
  const r = new Reliability({ random: seededRandom(seed) });
  const tools = Object.keys(rates);
  const picks: string[] = [];
  for (let i = 0; i < rounds; i++) {
    const tool = r.choose(tools, choice);
    picks.push(tool);
    r.observe({ tool, version: '1.0.0', ok: world() < rates[tool]!, durationMs: durations[tool]! });
  }
  return picks;
}

const share = (picks: string[], tool: string) => picks.filter((p) => p === tool).length / picks.length;

describe('routing', () => {
  it.each([1, 2, 3, 4, 5, 6, 7, 8])('learns the better of two tools (0.9 against 0.6), seed %i', (seed) => {
    for (const strategy of ['thompson', 'utility'] as const) {
      const picks = simulate({ weak: 0.6, strong: 0.9 }, { weak: 10, strong: 10 }, 200, seed, { strategy });
      expect(share(picks.slice(100), 'strong'), strategy).toBeGreaterThanOrEqual(0.9);
    }
  });

  it.each([1, 2, 3, 4])('with a cost weight, prefers the cheaper of two equally reliable tools, seed %i', (seed) => {
    for (const strategy of ['thompson', 'utility'] as const) {
      const picks = simulate({ slow: 0.8, fast: 0.8 }, { slow: 100, fast: 10 }, 200, seed, { strategy, costWeight: 0.5 });
      expect(share(picks.slice(100), 'fast'), strategy).toBeGreaterThanOrEqual(0.9);
    }
  });

  it('starts from past outcomes when seeded', () => {
    const r = new Reliability();
    r.seed([
      ...Array.from({ length: 30 }, (_, i) => ({ tool: 'a', version: '1.0.0', ok: i % 2 === 0 })),
      ...Array.from({ length: 30 }, () => ({ tool: 'b', version: '1.0.0', ok: true })),
    ]);
    expect(r.choose(['a', 'b'])).toBe('b');
  });

  it('routes a workflow step: after 200 runs, 90 % or more of the last 100 choose the better tool', async () => {
    const wf = loadWorkflow(`
name: routed
steps:
  - id: lint
    tool: [flaky-lint, solid-lint]
    route: { strategy: thompson }
    input: { text: x }
`);
    const world = seededRandom(42);
    const tools = new Tools({
      'flaky-lint': () => (world() < 0.6 ? ok('flaky-lint', {}) : failure('flaky-lint', ErrorCodes.UNEXPECTED_EXIT)),
      'solid-lint': () => (world() < 0.9 ? ok('solid-lint', {}) : failure('solid-lint', ErrorCodes.UNEXPECTED_EXIT)),
    });
    const reliability = new Reliability({ random: seededRandom(1) });
    const journal = new MemoryJournal();
    const h = host(journal, tools, { reliability });
    for (let i = 0; i < 200; i++) await runWorkflow(wf, {}, h);
    const choices = tools.calls.map((c) => c.tool);
    expect(choices).toHaveLength(200);
    expect(share(choices.slice(100), 'solid-lint')).toBeGreaterThanOrEqual(0.9);
    const solid = reliability.belief('solid-lint');
    expect(solid.interval[0]).toBeGreaterThan(0.75);
    // The step's events say where it was routed.
    const last = journal.events.get('run-200')!;
    expect(last[0]!.note).toMatch(/^routed to (flaky|solid)-lint \(of flaky-lint, solid-lint\)$/);
  });
});

describe('retirement', () => {
  it('a tool marked for retirement is not chosen while another candidate is not, even by Thompson sampling', () => {
    const r = new Reliability({ random: seededRandom(7), retire: { threshold: 0.5, minEvidence: 20 } });
    for (let i = 0; i < 25; i++) r.observe({ tool: 'old', version: '1.0.0', ok: i < 8 });
    expect(r.retired('old', 0.5, 20)).toBe(true);
    const picks = Array.from({ length: 200 }, () => r.choose(['old', 'new'], { strategy: 'thompson' }));
    expect(picks.every((p) => p === 'new')).toBe(true);
    // With nothing else to run, a retired tool still runs.
    expect(r.choose(['old'])).toBe('old');
    expect(r.choose(['old', 'old@1.0.0'])).toBe('old');
  });
});
